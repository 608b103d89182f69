//! The enqueue of the batches that flow control touches: jobs with throttle or debounce keys,
//! jobs with key limits, and any batch into a queue with a max depth. One transaction (a
//! savepoint in the caller's): a statement locks the batch's bounded queues and coalesce keys
//! (`sql/enqueue_lock.sql`), the next reads, with a snapshot taken after the locks, the keys'
//! holders and the queues' depths (`sql/enqueue_state.sql`), the fates are decided here
//! ([`fates`](crate::fates)), and one statement writes them (`sql/enqueue_guarded.sql`). A
//! batch that would overfill a bounded queue writes nothing and is
//! [`Error::QueueFull`]. Every enqueue into a bounded queue comes this way (the plain
//! statements store nothing into one), so the depth is exact under concurrent enqueues from
//! any number of processes.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use jobs_core::fates::{self, answer, Fate, Held, Slot, Target};
use jobs_core::{later, Coalesce, Enqueued, Error, JobId, NewJob, Timestamp};
use sqlx::{Connection, PgConnection, Row};
use uuid::Uuid;

use crate::columns::bind_columns;
use crate::error::{db, is_unique_key_violation, RACE_ROUNDS};
use crate::record::int4;
use crate::sql::Sql;

/// Whether `job` must be enqueued this way, whatever its queue.
pub(crate) fn needed(job: &NewJob) -> bool {
    job.coalesce.is_some() || job.key_limits.is_some()
}

/// Where the statements send wake-ups: the channel, and the queues to wake.
pub(crate) type Wakes<'a> = Option<(&'a str, &'a [&'a str])>;

/// Stores `jobs` under the locks their queues and keys need. A unique key taken meanwhile by
/// an enqueue that holds no lock (unique jobs of unbounded queues take none) fails the write,
/// and the transaction starts over with a new snapshot, which sees the key's holder.
pub(crate) async fn enqueue(
    sql: &Sql,
    conn: &mut PgConnection,
    jobs: &[NewJob],
    now: Timestamp,
    wakes: Wakes<'_>,
) -> Result<Vec<Enqueued>, Error> {
    for _ in 0..RACE_ROUNDS {
        let mut tx = conn.begin().await.map_err(db)?;
        if let Some(out) = attempt(sql, &mut tx, jobs, now, wakes).await? {
            tx.commit().await.map_err(db)?;
            return Ok(out);
        }
    }
    Err(Error::backend(
        "unique keys kept being taken by concurrent enqueues invisible to this transaction",
    ))
}

/// One try in the transaction `conn`: the answers, or `None` when a unique key was taken
/// meanwhile.
async fn attempt(
    sql: &Sql,
    conn: &mut PgConnection,
    jobs: &[NewJob],
    now: Timestamp,
    wakes: Wakes<'_>,
) -> Result<Option<Vec<Enqueued>>, Error> {
    let slots = distinct(jobs.iter().filter_map(fates::slot));
    let uniques = distinct(
        jobs.iter()
            .filter_map(|j| Some((j.queue.as_str(), j.unique_key.as_deref()?))),
    );
    let bounded = lock(sql, conn, jobs, &slots).await?;
    let (held, depths) = if slots.is_empty() && uniques.is_empty() && bounded.is_empty() {
        (Held::default(), Vec::new())
    } else {
        state(sql, conn, &slots, &uniques, &bounded, now).await?
    };
    let fates = fates::fates(jobs, &held);
    check_depth(jobs, &fates, &bounded, &depths)?;
    if !write(sql, conn, jobs, &fates, now, wakes).await? {
        return Ok(None);
    }
    Ok(Some(
        (0..jobs.len()).map(|i| answer(jobs, &fates, i)).collect(),
    ))
}

/// The items, each once, sorted.
fn distinct<T: Ord>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut items: Vec<T> = items.collect();
    items.sort_unstable();
    items.dedup();
    items
}

/// Locks the batch's bounded queues and coalesce keys; answers the bounded queues with their
/// max depths.
async fn lock(
    sql: &Sql,
    conn: &mut PgConnection,
    jobs: &[NewJob],
    slots: &[Slot<'_>],
) -> Result<Vec<(String, u64)>, Error> {
    let queues = distinct(jobs.iter().map(|j| j.queue.as_str()));
    let rows = sqlx::query(&sql.enqueue_lock)
        .bind(sql.schema.name())
        .bind(queues)
        .bind(slots.iter().map(|s| s.0).collect::<Vec<_>>())
        .bind(slots.iter().map(|s| s.1).collect::<Vec<_>>())
        .bind(slots.iter().map(|s| s.2).collect::<Vec<_>>())
        .fetch_all(conn)
        .await
        .map_err(db)?;
    let mut bounded = Vec::new();
    for row in rows {
        let queue: Option<String> = row.try_get("queue").map_err(db)?;
        let max_depth: Option<i64> = row.try_get("max_depth").map_err(db)?;
        if let (Some(queue), Some(max_depth)) = (queue, max_depth) {
            bounded.push((queue, u64::try_from(max_depth).unwrap_or(0)));
        }
    }
    Ok(bounded)
}

/// The keys' holders, and the depth of each bounded queue (in the order of `bounded`).
async fn state<'j>(
    sql: &Sql,
    conn: &mut PgConnection,
    slots: &[Slot<'j>],
    uniques: &[(&'j str, &'j str)],
    bounded: &[(String, u64)],
    now: Timestamp,
) -> Result<(Held<'j>, Vec<u64>), Error> {
    let rows = sqlx::query(&sql.enqueue_state)
        .bind(slots.iter().map(|s| s.0).collect::<Vec<_>>())
        .bind(slots.iter().map(|s| s.1).collect::<Vec<_>>())
        .bind(slots.iter().map(|s| s.2).collect::<Vec<_>>())
        .bind(now)
        .bind(uniques.iter().map(|u| u.0).collect::<Vec<_>>())
        .bind(uniques.iter().map(|u| u.1).collect::<Vec<_>>())
        .bind(bounded.iter().map(|b| b.0.as_str()).collect::<Vec<_>>())
        .fetch_all(conn)
        .await
        .map_err(db)?;
    let mut held = Held::default();
    let mut depths = vec![0; bounded.len()];
    for row in rows {
        let kind: String = row.try_get("kind").map_err(db)?;
        let ord: i64 = row.try_get("ord").map_err(db)?;
        let at =
            usize::try_from(ord - 1).map_err(|_| Error::backend("a finding without a place"))?;
        let id: Option<Uuid> = row.try_get("id").map_err(db)?;
        let holder = || {
            id.map(JobId)
                .ok_or_else(|| Error::backend("a holder without an id"))
        };
        match kind.as_str() {
            "unique" => {
                held.unique.insert(uniques[at], holder()?);
            }
            "depth" => {
                let n: i64 = row.try_get("n").map_err(db)?;
                depths[at] = u64::try_from(n).unwrap_or(0);
            }
            _ => {
                held.coalesce.insert(slots[at], holder()?);
            }
        }
    }
    Ok((held, depths))
}

/// [`Error::QueueFull`] for the first bounded queue (by name) whose depth the batch's new jobs
/// would take beyond its max depth.
fn check_depth(
    jobs: &[NewJob],
    fates: &[Fate],
    bounded: &[(String, u64)],
    depths: &[u64],
) -> Result<(), Error> {
    let mut new: BTreeMap<&str, u64> = BTreeMap::new();
    for (job, fate) in jobs.iter().zip(fates) {
        if *fate == Fate::New {
            *new.entry(job.queue.as_str()).or_default() += 1;
        }
    }
    for (queue, n) in new {
        let Some(i) = bounded.iter().position(|(q, _)| q == queue) else {
            continue;
        };
        let max_depth = bounded[i].1;
        if depths[i] + n > max_depth {
            return Err(Error::QueueFull {
                queue: queue.to_string(),
                max_depth,
            });
        }
    }
    Ok(())
}

/// Writes the fates; `false` when a unique key was taken meanwhile (nothing is written).
async fn write(
    sql: &Sql,
    conn: &mut PgConnection,
    jobs: &[NewJob],
    fates: &[Fate],
    now: Timestamp,
    wakes: Wakes<'_>,
) -> Result<bool, Error> {
    // The new jobs, each with the payload (and its version) and run time of the last job folded
    // into it.
    let mut rows: Vec<Cow<'_, NewJob>> = Vec::new();
    let mut row_of: HashMap<usize, usize> = HashMap::new();
    // The waiting jobs folded into, each with the index of the last job folded into it.
    let mut folds: HashMap<JobId, usize> = HashMap::new();
    for (i, fate) in fates.iter().enumerate() {
        match *fate {
            Fate::New => {
                row_of.insert(i, rows.len());
                rows.push(Cow::Borrowed(&jobs[i]));
            }
            Fate::Fold(Target::Batch(first)) => {
                let row = rows[row_of[&first]].to_mut();
                row.payload = jobs[i].payload.clone();
                row.version = jobs[i].version;
                row.run_at = jobs[i].run_at;
            }
            Fate::Fold(Target::Stored(id)) => {
                folds.insert(id, i);
            }
            Fate::Duplicate(_) => {}
        }
    }
    let folds: Vec<(JobId, &NewJob)> = folds.into_iter().map(|(id, i)| (id, &jobs[i])).collect();
    let holds: Vec<(&NewJob, &Coalesce)> = rows
        .iter()
        .filter_map(|row| Some((row.as_ref(), row.coalesce.as_ref()?)))
        .collect();
    let slots: Vec<Slot<'_>> = holds
        .iter()
        .filter_map(|(job, _)| fates::slot(job))
        .collect();
    let keyed = distinct(
        rows.iter()
            .filter(|row| row.key_limits.is_some())
            .map(|row| row.queue.as_str()),
    );
    let key_limits = rows
        .iter()
        .map(|row| {
            row.key_limits
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
        })
        .collect::<Result<Vec<Option<String>>, _>>()?;
    let (channel, woken) = wakes.unzip();
    let written = bind_columns(sqlx::query(&sql.enqueue_guarded), &rows, now)?
        .bind(
            rows.iter()
                .map(|r| r.unique_key.as_deref())
                .collect::<Vec<_>>(),
        )
        .bind(key_limits)
        .bind(now)
        .bind(folds.iter().map(|(id, _)| id.0).collect::<Vec<Uuid>>())
        .bind(
            folds
                .iter()
                .map(|(_, j)| j.payload.get())
                .collect::<Vec<_>>(),
        )
        .bind(
            folds
                .iter()
                .map(|(_, j)| j.run_at)
                .collect::<Vec<Timestamp>>(),
        )
        .bind(
            folds
                .iter()
                .map(|(_, j)| j.initial_status(now).as_str())
                .collect::<Vec<_>>(),
        )
        .bind(
            folds
                .iter()
                .map(|(_, j)| int4(j.version))
                .collect::<Vec<i32>>(),
        )
        .bind(slots.iter().map(|s| s.0).collect::<Vec<_>>())
        .bind(slots.iter().map(|s| s.1).collect::<Vec<_>>())
        .bind(slots.iter().map(|s| s.2).collect::<Vec<_>>())
        .bind(holds.iter().map(|(job, _)| job.id.0).collect::<Vec<Uuid>>())
        .bind(
            holds
                .iter()
                .map(|(_, coalesce)| match coalesce {
                    Coalesce::Throttle { window, .. } => Some(later(now, *window)),
                    Coalesce::Debounce { .. } => None,
                })
                .collect::<Vec<Option<Timestamp>>>(),
        )
        .bind(keyed)
        .bind(channel)
        .bind(woken.unwrap_or_default())
        .fetch_one(conn)
        .await;
    let row = match written {
        Err(e) if is_unique_key_violation(&e) => return Ok(false),
        written => written.map_err(db)?,
    };
    let stored: i64 = row.try_get("stored").map_err(db)?;
    let folded: i64 = row.try_get("folded").map_err(db)?;
    if stored != rows.len() as i64 || folded != folds.len() as i64 {
        return Err(Error::backend(format!(
            "stored {stored} of {} jobs and folded {folded} of {} in one statement",
            rows.len(),
            folds.len()
        )));
    }
    Ok(true)
}
