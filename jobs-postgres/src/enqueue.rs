//! The one SQL path every enqueue takes: the backend, a pool, a caller's transaction, cron.

use std::collections::BTreeSet;

use jobs_core::{
    first_holders, CronTickParams, Enqueued, Error, JobId, JobStatus, NewJob, Timestamp,
};
use sqlx::{PgConnection, PgPool, Row};
use uuid::Uuid;

use crate::columns::bind_columns;
use crate::deliverable;
use crate::error::{db, RACE_ROUNDS};
use crate::guarded;
use crate::notifier::Turn;
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
    // Lives until the enqueue ends, then hands the signals over unless the statements sent them
    // (or the job went straight to a worker). Only such an enqueue, which commits by itself,
    // may deliver its job: a caller's transaction would hold the offer, and the job's lease,
    // until it commits.
    let (mut turn, in_statement) = match wake {
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
            enqueue_plain(sql, conn, &jobs, now, wake, turn.as_mut())
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
/// straight to an idle worker when its enqueue commits by itself, with its `turn` (see
/// [`offers`](crate::offers)). `false` when a queue of the batch is bounded: the statement
/// stored nothing.
async fn enqueue_plain(
    sql: &Sql,
    conn: &mut PgConnection,
    jobs: &[NewJob],
    now: Timestamp,
    wake: &[&str],
    turn: Option<&mut Turn<'_>>,
) -> Result<bool, Error> {
    let stored = if let [job] = jobs {
        u64::from(store_one(sql, conn, job, now, wake, turn).await?)
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
/// may lease it to an idle worker, when the enqueue has a `turn` and the last enqueue into its
/// queue did not see that no offer stood there, else through the plain INSERT. A job delivered
/// leaves its turn nothing to wake. `false` when its queue is bounded: nothing was stored.
async fn store_one(
    sql: &Sql,
    conn: &mut PgConnection,
    job: &NewJob,
    now: Timestamp,
    wake: &[&str],
    turn: Option<&mut Turn<'_>>,
) -> Result<bool, Error> {
    let record = if turn.is_some() && sql.offered.worth_trying(&job.queue) {
        deliverable::record(job, now)?
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
    // Whether an offer stood in the queue, and took the job; none when the queue is bounded.
    let (offered, delivered): (Option<bool>, Option<bool>) =
        match query.fetch_optional(conn).await.map_err(db)? {
            Some(row) => (
                row.try_get("offered").map_err(db)?,
                row.try_get("delivered").map_err(db)?,
            ),
            None => (None, None),
        };
    if let Some(offered) = offered {
        sql.offered.saw(&job.queue, offered);
    }
    if let (Some(true), Some(turn)) = (delivered, turn) {
        turn.delivered();
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use jobs_core::testing::deliveries::{delivered, job, offer, subscribe, QUEUE};
    use sqlx::postgres::PgListener;

    use super::*;
    use crate::PgBackend;

    /// An enqueue whose job went straight to an idle worker wakes no one, even when it ends
    /// while another enqueue of the process is under way (whose signals then go after both).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_delivered_job_wakes_no_one() {
        let url = std::env::var("JOBS_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let pool = PgPool::connect(&url).await.expect("the test database");
        let schema = format!(
            "jobs_turn_test_{}",
            &Uuid::new_v4().simple().to_string()[..12]
        );
        let b = PgBackend::from_pool(pool.clone()).schema(&schema).unwrap();
        b.migrate().await.unwrap();
        let wakeup = subscribe(&b, "idle-worker").await;
        offer(&b, 1).await;
        let mut listener = PgListener::connect_with(&pool).await.unwrap();
        listener.listen(b.sql().channel()).await.unwrap();

        // Other enqueues under way, so that this one leaves its signal to the task; the second
        // leaves its own to it too.
        let first = Turn::start(&pool, b.sql().channel(), &["first"]);
        let second = Turn::start(&pool, b.sql().channel(), &["other"]);
        let now = job().run_at;
        let mut conn = pool.acquire().await.unwrap();
        let stored = enqueue(b.sql(), &mut conn, vec![job()], now, Wake::Commits(&pool)).await;
        assert_eq!(stored.unwrap().len(), 1);
        assert_eq!(delivered(&wakeup).await.len(), 1);
        drop((second, first));

        let mut heard = Vec::new();
        while let Ok(n) = tokio::time::timeout(Duration::from_millis(300), listener.recv()).await {
            heard.push(n.unwrap().payload().to_owned());
        }
        assert_eq!(heard, ["other"], "nothing woken for {QUEUE}");
        sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .execute(&pool)
            .await
            .unwrap();
    }
}
