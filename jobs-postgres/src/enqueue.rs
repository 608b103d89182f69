//! The one SQL path every enqueue takes: the backend, a pool, a caller's transaction, cron.

use std::collections::BTreeSet;

use jobs_core::{
    first_holders, CronTickParams, Enqueued, Error, JobId, JobStatus, NewJob, Timestamp,
};
use sqlx::{PgConnection, PgPool, Row};
use uuid::Uuid;

use crate::columns::bind_columns;
use crate::error::{db, RACE_ROUNDS};
use crate::guarded;
use crate::notifier::Turn;
use crate::offers;
use crate::record::{int4, millis, step};
use crate::sql::Sql;

/// How an enqueue wakes the workers of the queues it gave ready jobs.
#[derive(Debug)]
pub(crate) enum Wake<'p> {
    /// Within its statements, so the signal goes out when the caller's transaction commits.
    InTransaction,
    /// Its statements commit by themselves on a connection of this pool: within them when no
    /// other enqueue of the store is under way, else after them (see [`notifier`](crate::notifier)).
    Commits(&'p PgPool),
    /// Not at all: the queues are added here, for the caller to wake after its transaction
    /// commits (see [`EnqueueTransaction`](crate::EnqueueTransaction)).
    AfterCommit(&'p mut BTreeSet<String>),
}

/// Stores `jobs` in one statement (more only when a concurrent enqueue raced for a unique key,
/// or when flow control touches the batch: then [`guarded`]).
///
/// Jobs of one batch sharing a queue and unique key are stored once: the later ones are
/// duplicates of the first ([`first_holders`]).
pub(crate) async fn enqueue(
    sql: &Sql,
    conn: &mut PgConnection,
    jobs: Vec<NewJob>,
    now: Timestamp,
    wake: Wake<'_>,
) -> Result<Vec<Enqueued>, Error> {
    let ready = ready_queues(&jobs, now);
    let deliver = matches!(wake, Wake::Commits(_));
    // Lives until the enqueue ends, then hands the signals over unless the statements sent them.
    let (_turn, in_statement) = match wake {
        Wake::InTransaction => (None, true),
        Wake::Commits(pool) => {
            let turn = Turn::start(pool, sql.channel(), &ready);
            let alone = turn.in_statement();
            (Some(turn), alone)
        }
        Wake::AfterCommit(queues) => {
            queues.extend(ready.iter().map(|q| q.to_string()));
            (None, false)
        }
    };
    // The channel the statements notify, if they do.
    let channel = in_statement.then(|| sql.channel());
    if !jobs.iter().any(guarded::needed) {
        let stored = if jobs.iter().all(|j| j.unique_key.is_none()) {
            let wake = if channel.is_some() { &ready[..] } else { &[] };
            enqueue_plain(sql, conn, &jobs, now, wake, deliver)
                .await?
                .then(|| {
                    jobs.iter()
                        .map(|j| Enqueued {
                            id: j.id,
                            duplicate: false,
                        })
                        .collect()
                })
        } else {
            enqueue_unique(sql, conn, &jobs, now, channel).await?
        };
        if let Some(stored) = stored {
            return Ok(stored);
        }
    }
    let wakes = channel.map(|channel| (channel, &ready[..]));
    guarded::enqueue(sql, conn, &jobs, now, wakes).await
}

/// Jobs some of which have unique keys, into unbounded queues: the answers, or `None` when a
/// queue of the batch is bounded (nothing was stored).
async fn enqueue_unique(
    sql: &Sql,
    conn: &mut PgConnection,
    jobs: &[NewJob],
    now: Timestamp,
    channel: Option<&str>,
) -> Result<Option<Vec<Enqueued>>, Error> {
    let same_as = first_holders(jobs);
    let mut out: Vec<Option<Enqueued>> = vec![None; jobs.len()];
    let mut todo: Vec<usize> = (0..jobs.len()).filter(|&i| same_as[i].is_none()).collect();
    for _ in 0..RACE_ROUNDS {
        if todo.is_empty() {
            break;
        }
        let batch: Vec<&NewJob> = todo.iter().map(|&i| &jobs[i]).collect();
        let Some(rows) = insert(sql, &mut *conn, &batch, now, channel).await? else {
            return Ok(None);
        };
        let mut again = Vec::new();
        for (&i, (stored, holder)) in todo.iter().zip(rows) {
            out[i] = match (stored, holder) {
                (true, _) => Some(Enqueued {
                    id: jobs[i].id,
                    duplicate: false,
                }),
                (false, Some(holder)) => Some(Enqueued {
                    id: JobId(holder),
                    duplicate: true,
                }),
                (false, None) => {
                    again.push(i);
                    None
                }
            };
        }
        todo = again;
    }
    if !todo.is_empty() {
        return Err(Error::backend(
            "unique keys kept being taken by concurrent enqueues invisible to this transaction",
        ));
    }
    for (i, earlier) in same_as.iter().enumerate() {
        if let Some(earlier) = earlier {
            out[i] = out[*earlier].map(|e| Enqueued {
                id: e.id,
                duplicate: true,
            });
        }
    }
    Ok(Some(out.into_iter().flatten().collect()))
}

/// Jobs without unique keys: nothing can be a duplicate, so a plain INSERT stores them all
/// (one row's VALUES for a single job, `unnest` arrays for a batch), and the answer needs no
/// round trip of its own. The statement notifies the queues `wake`. A single job may go
/// straight to an idle worker when `deliver` says that its enqueue commits by itself (see
/// [`offers`](crate::offers)). `false` when a queue of the batch is bounded: the statement
/// stored nothing.
async fn enqueue_plain(
    sql: &Sql,
    conn: &mut PgConnection,
    jobs: &[NewJob],
    now: Timestamp,
    wake: &[&str],
    deliver: bool,
) -> Result<bool, Error> {
    let stored = if let [job] = jobs {
        u64::from(store_one(sql, conn, job, now, wake, deliver).await?)
    } else {
        bind_columns(sqlx::query(&sql.enqueue_many), jobs, now)?
            .bind(now)
            .bind(sql.channel())
            .bind(wake)
            .execute(conn)
            .await
            .map_err(db)?
            .rows_affected()
    };
    if stored == 0 {
        return Ok(false);
    }
    if stored != jobs.len() as u64 {
        return Err(Error::backend(format!(
            "stored {stored} of {} jobs in one statement",
            jobs.len()
        )));
    }
    Ok(true)
}

/// Stores one job without a unique key (see [`enqueue_plain`]): through `deliver_one`, which
/// may lease it to an idle worker, when `deliver` allows and the last enqueue into its queue
/// did not see that no offer stood there, else through the plain INSERT. `false` when its queue
/// is bounded: nothing was stored.
async fn store_one(
    sql: &Sql,
    conn: &mut PgConnection,
    job: &NewJob,
    now: Timestamp,
    wake: &[&str],
    deliver: bool,
) -> Result<bool, Error> {
    let record = if deliver && sql.offered.worth_trying(&job.queue) {
        offers::deliverable(job, now)?
    } else {
        None
    };
    let query = sqlx::query(match record {
        Some(_) => &sql.deliver_one,
        None => &sql.enqueue_one,
    })
    .bind(job.id.0)
    .bind(job.name.as_str())
    .bind(job.queue.as_str())
    .bind(job.payload.get())
    .bind(job.priority)
    .bind(job.run_at)
    .bind(job.initial_status(now).as_str())
    .bind(int4(job.max_attempts))
    .bind(serde_json::to_string(&job.backoff)?)
    .bind(job.timeout.map(millis))
    .bind(job.trace_context.as_deref())
    .bind(&job.tags)
    .bind(now)
    .bind((!wake.is_empty()).then(|| sql.channel()))
    .bind(int4(job.version))
    .bind(step(job)?);
    let query = match record {
        Some(record) => query.bind(record),
        None => query,
    };
    // Whether an offer stood in the queue; none when the queue is bounded.
    let offered: Option<bool> = match query.fetch_optional(conn).await.map_err(db)? {
        Some(row) => row.try_get("offered").map_err(db)?,
        None => None,
    };
    if let Some(offered) = offered {
        sql.offered.saw(&job.queue, offered);
    }
    Ok(offered.is_some())
}

/// The queues, each once, of the `jobs` that are ready at `now`.
fn ready_queues(jobs: &[NewJob], now: Timestamp) -> Vec<&str> {
    let mut queues: Vec<&str> = jobs
        .iter()
        .filter(|j| j.initial_status(now) == JobStatus::Pending)
        .map(|j| j.queue.as_str())
        .collect();
    queues.sort_unstable();
    queues.dedup();
    queues
}

/// One round: for each job, whether it was stored, and else which active job holds its key;
/// `None` when a queue of the batch is bounded (nothing was stored).
async fn insert(
    sql: &Sql,
    conn: &mut PgConnection,
    jobs: &[&NewJob],
    now: Timestamp,
    channel: Option<&str>,
) -> Result<Option<Vec<(bool, Option<Uuid>)>>, Error> {
    let rows = bind_columns(sqlx::query(&sql.enqueue), jobs, now)?
        .bind(
            jobs.iter()
                .map(|j| j.unique_key.as_deref())
                .collect::<Vec<_>>(),
        )
        .bind(now)
        .bind(channel)
        .fetch_all(conn)
        .await
        .map_err(db)?;
    let bounded = match rows.first() {
        Some(row) => row.try_get("bounded").map_err(db)?,
        None => false,
    };
    if bounded {
        return Ok(None);
    }
    rows.iter()
        .map(|row| {
            Ok((
                row.try_get("stored").map_err(db)?,
                row.try_get("holder").map_err(db)?,
            ))
        })
        .collect::<Result<_, Error>>()
        .map(Some)
}

/// Claims the tick and stores its job, in one transaction; `None` when the tick (or a later one)
/// was already claimed, or the job's unique key is held.
pub(crate) async fn enqueue_cron(
    sql: &Sql,
    conn: &mut PgConnection,
    p: CronTickParams,
) -> Result<Option<JobId>, Error> {
    let mut tx = sqlx::Connection::begin(conn).await.map_err(db)?;
    let claimed = sqlx::query(&sql.cron_tick)
        .bind(&p.schedule)
        .bind(p.tick)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?
        .is_some();
    if !claimed {
        return Ok(None);
    }
    let stored = enqueue(sql, &mut tx, vec![p.job], p.now, Wake::InTransaction).await?;
    tx.commit().await.map_err(db)?;
    Ok(stored.first().filter(|e| !e.duplicate).map(|e| e.id))
}
