//! A queue's throughput, `finished_since`, counted from the per-minute buckets of
//! `finished_minutes`, stays the exact count of the table's rows, compared for times on and
//! between minute boundaries, through every statement that finishes jobs or unfinishes them,
//! prunes that drop old minutes, a recount and a truncate; and it reads the buckets, not the
//! rows of the minutes they cover.

use jobs_core::{
    Action, Backend, FinishedParams, JobFilter, JobId, LeasedJob, ManageParams, PruneParams,
    Target, Timestamp,
};
use jobs_postgres::PgBackend;

use crate::support::{at, complete, fetch, fresh_backend, new_job, put};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

/// When the later pruning runs: its horizon, 25 hours before, is one hour after `t0`.
const LATER: i64 = 26 * HOUR;

/// The times (ms after `t0`, a minute boundary) counted from: before, on and between the
/// boundaries of the minutes jobs finish in, and on either side of the later horizon.
const SINCES: [i64; 16] = [
    -MINUTE,
    0,
    1,
    30_000,
    MINUTE - 1,
    MINUTE,
    MINUTE + 1,
    2 * MINUTE - 1,
    2 * MINUTE,
    150_000,
    3 * MINUTE,
    HOUR - MINUTE,
    HOUR - MINUTE + 1,
    LATER,
    LATER + 30_000,
    LATER + MINUTE,
];

/// What the backend answers for `queue` since `since`.
async fn kept(backend: &PgBackend, queue: &str, since: Timestamp) -> u64 {
    backend
        .finished_since(FinishedParams {
            queue: queue.into(),
            since,
        })
        .await
        .expect("finished since")
}

/// The same count, over the rows of the table.
async fn counted(backend: &PgBackend, queue: &str, since: Timestamp) -> u64 {
    let n: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM \"{}\".jobs
         WHERE queue = $1 AND status IN ('completed', 'cancelled') AND finished_at >= $2",
        backend.schema_name()
    ))
    .bind(queue)
    .bind(since)
    .fetch_one(backend.pool())
    .await
    .expect("count the table");
    n as u64
}

/// Asserts that both queues' counts are the table's from every time of [`SINCES`], and returns
/// queue `c`'s count of every finished job.
async fn exact(backend: &PgBackend, step: &str) -> u64 {
    for queue in ["c", "d"] {
        for ms in SINCES {
            assert_eq!(
                kept(backend, queue, at(ms)).await,
                counted(backend, queue, at(ms)).await,
                "queue {queue} since {ms} ms after {step}"
            );
        }
    }
    kept(backend, "c", at(-HOUR)).await
}

/// Runs `action` on the jobs `ids` at `now_ms`, answering the jobs it changed.
async fn manage(backend: &PgBackend, action: Action, ids: &[JobId], now_ms: i64) -> usize {
    backend
        .manage(ManageParams {
            action,
            target: Target::Ids(ids.to_vec()),
            limit: ids.len(),
            now: at(now_ms),
        })
        .await
        .expect("manage")
        .changed
        .len()
}

/// Prunes queue `c` at `now_ms`, keeping its newest `keep` finished jobs (all: `None`).
async fn prune(backend: &PgBackend, keep: Option<u64>, now_ms: i64) -> u64 {
    backend
        .prune(PruneParams {
            queue: "c".into(),
            keep_count: keep,
            finished_before: None,
            limit: 1_000,
            now: at(now_ms),
        })
        .await
        .expect("prune")
}

/// Runs `sql` on the backend's schema (`{schema}` stands for it) and answers its one number.
async fn scalar(backend: &PgBackend, sql: &str) -> i64 {
    let quoted = format!("\"{}\"", backend.schema_name());
    sqlx::query_scalar(&sql.replace("{schema}", &quoted))
        .fetch_one(backend.pool())
        .await
        .expect("query the schema")
}

/// Queue `c`'s bucket rows and the minutes of them that have more than one.
async fn bucket_rows(backend: &PgBackend) -> (i64, i64) {
    let rows = scalar(
        backend,
        "SELECT count(*) FROM {schema}.finished_minutes WHERE queue = 'c'",
    )
    .await;
    let unfolded = scalar(
        backend,
        "SELECT count(*) FROM (SELECT minute FROM {schema}.finished_minutes
         WHERE queue = 'c' GROUP BY minute HAVING count(*) > 1) m",
    )
    .await;
    (rows, unfolded)
}

fn ids(leased: &[LeasedJob]) -> Vec<JobId> {
    leased.iter().map(|j| j.record.id).collect()
}

#[tokio::test]
async fn finished_since_stays_exact_through_every_kind_of_write() {
    let backend = fresh_backend().await;
    put(
        &backend,
        (0..30).map(|_| new_job("e", "c")).collect(),
        at(0),
    )
    .await;
    let leased = fetch(&backend, "c", 30, 500).await;
    let waiting = put(
        &backend,
        (0..12).map(|_| new_job("e", "c")).collect(),
        at(0),
    )
    .await;
    let others = put(&backend, (0..4).map(|_| new_job("e", "d")).collect(), at(0)).await;
    assert_eq!(exact(&backend, "enqueue").await, 0);

    // Completions in three minutes, on their boundaries and between them.
    assert_eq!(complete(&backend, &leased[..5], 10_000).await, [true; 5]);
    assert_eq!(
        complete(&backend, &leased[5..10], MINUTE - 1).await,
        [true; 5]
    );
    assert_eq!(complete(&backend, &leased[10..15], MINUTE).await, [true; 5]);
    assert_eq!(
        complete(&backend, &leased[15..18], 150_000).await,
        [true; 3]
    );
    assert_eq!(exact(&backend, "completes").await, 18);
    // A repeated completion changes nothing.
    assert_eq!(complete(&backend, &leased[..2], 170_000).await, [true; 2]);
    assert_eq!(exact(&backend, "a repeated completion").await, 18);

    // Cancels of pending and running jobs, in other minutes and queues.
    assert_eq!(
        manage(&backend, Action::Cancel, &waiting[..6], 90_000).await,
        6
    );
    assert_eq!(
        manage(&backend, Action::Cancel, &ids(&leased[18..20]), 125_000).await,
        2
    );
    assert_eq!(
        manage(&backend, Action::Cancel, &others[..2], 61_000).await,
        2
    );
    assert_eq!(exact(&backend, "cancels").await, 26);

    // Retries of finished jobs: the cancelled ones go back to pending, completed ones stay.
    assert_eq!(
        manage(&backend, Action::Retry, &waiting[..2], 200_000).await,
        2
    );
    assert_eq!(
        manage(&backend, Action::Retry, &ids(&leased[..1]), 200_000).await,
        0
    );
    assert_eq!(
        manage(&backend, Action::Retry, &others[..1], 200_000).await,
        1
    );
    assert_eq!(exact(&backend, "retries").await, 24);

    // Deletes of completed, cancelled and pending jobs.
    assert_eq!(
        manage(&backend, Action::Delete, &ids(&leased[4..6]), 210_000).await,
        2
    );
    assert_eq!(
        manage(&backend, Action::Delete, &waiting[2..3], 210_000).await,
        1
    );
    assert_eq!(
        manage(&backend, Action::Delete, &waiting[8..9], 210_000).await,
        1
    );
    assert_eq!(exact(&backend, "deletes").await, 21);

    // A bulk cancel by filter: the seven waiting and ten leased jobs left.
    let managed = backend
        .manage(ManageParams {
            action: Action::Cancel,
            target: Target::Matching {
                filter: JobFilter::new().queue("c"),
                after: None,
            },
            limit: 100,
            now: at(240_000),
        })
        .await
        .expect("bulk cancel");
    assert_eq!(managed.changed.len(), 17);
    assert_eq!(exact(&backend, "a bulk cancel").await, 38);

    // A prune removes the oldest finished jobs and folds the minutes: one row each.
    assert!(
        bucket_rows(&backend).await.1 > 0,
        "several rows for a minute"
    );
    assert_eq!(prune(&backend, Some(31), 300_000).await, 7);
    assert_eq!(exact(&backend, "a prune").await, 31);
    assert_eq!(bucket_rows(&backend).await.1, 0, "one row per minute");

    // A later prune drops the minutes before its horizon (one hour after t0): the counts from
    // before it are counted from the rows, those after it from the buckets.
    put(
        &backend,
        (0..6).map(|_| new_job("e", "c")).collect(),
        at(LATER),
    )
    .await;
    let leased = fetch(&backend, "c", 6, LATER).await;
    assert_eq!(prune(&backend, None, LATER).await, 0);
    assert_eq!(
        bucket_rows(&backend).await.0,
        0,
        "every minute before the horizon"
    );
    assert_eq!(
        complete(&backend, &leased[..4], LATER + 20_000).await,
        [true; 4]
    );
    assert_eq!(
        manage(&backend, Action::Cancel, &ids(&leased[4..]), LATER + MINUTE).await,
        2
    );
    assert_eq!(
        exact(&backend, "a prune past the finished minutes").await,
        37
    );
    // A delete of a job of a dropped minute, and a prune at an earlier time, which does not
    // move the horizon back.
    let doomed: Vec<JobId> = sqlx::query_scalar(&format!(
        "SELECT id FROM \"{}\".jobs
         WHERE queue = 'c' AND status = 'completed' AND finished_at < $1 LIMIT 1",
        backend.schema_name()
    ))
    .bind(at(HOUR))
    .fetch_all(backend.pool())
    .await
    .expect("an old job")
    .into_iter()
    .map(JobId)
    .collect();
    assert_eq!(manage(&backend, Action::Delete, &doomed, LATER).await, 1);
    assert_eq!(prune(&backend, None, 300_000).await, 0);
    assert_eq!(exact(&backend, "a delete before the horizon").await, 36);
    assert_eq!(prune(&backend, Some(3), LATER + HOUR).await, 33);
    assert_eq!(exact(&backend, "a prune of the recent minutes").await, 3);

    // A recount rebuilds lost buckets.
    scalar(
        &backend,
        "WITH lost AS (DELETE FROM {schema}.finished_minutes RETURNING 1) SELECT count(*) FROM lost",
    )
    .await;
    assert_eq!(
        kept(&backend, "c", at(LATER)).await,
        0,
        "the buckets are lost"
    );
    backend.recount().await.expect("recount");
    assert_eq!(exact(&backend, "a recount").await, 3);

    // TRUNCATE bypasses the statements; the trigger empties the buckets and horizons too.
    sqlx::query(&format!("TRUNCATE \"{}\".jobs", backend.schema_name()))
        .execute(backend.pool())
        .await
        .expect("truncate");
    assert_eq!(exact(&backend, "a truncate").await, 0);
    let left = scalar(
        &backend,
        "SELECT (SELECT count(*) FROM {schema}.finished_minutes)
              + (SELECT count(*) FROM {schema}.finished_horizons)",
    )
    .await;
    assert_eq!(left, 0);
}

/// Writers of one queue at once: completions in several minutes (each batch sent twice under
/// the same leases), cancels and retries of the cancelled, deletes of jobs being completed, and
/// prunes folding and dropping minutes meanwhile. The count stays exact from every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn finished_since_stays_exact_under_concurrent_writers() {
    let backend = fresh_backend().await;
    let ids = put(
        &backend,
        (0..200).map(|_| new_job("e", "c")).collect(),
        at(0),
    )
    .await;
    let leased = fetch(&backend, "c", 120, 500).await;
    let running: std::collections::HashSet<_> = leased.iter().map(|j| j.record.id).collect();
    let waiting: Vec<_> = ids.into_iter().filter(|id| !running.contains(id)).collect();

    let mut tasks = tokio::task::JoinSet::new();
    for (i, chunk) in leased.chunks(10).enumerate() {
        for _ in 0..2 {
            let (b, chunk) = (backend.clone(), chunk.to_vec());
            tasks.spawn(async move {
                complete(&b, &chunk, i as i64 * 25_000).await;
            });
        }
    }
    for id in leased[..20].iter().map(|j| j.record.id) {
        let b = backend.clone();
        tasks.spawn(async move {
            manage(&b, Action::Delete, &[id], 100_000).await;
        });
    }
    for (i, &id) in waiting[..40].iter().enumerate() {
        let b = backend.clone();
        tasks.spawn(async move {
            manage(&b, Action::Cancel, &[id], i as i64 * 7_000).await;
            if i % 2 == 0 {
                manage(&b, Action::Retry, &[id], 300_000).await;
            }
        });
    }
    for now in [MINUTE, HOUR + 2 * MINUTE, 25 * HOUR + 2 * MINUTE] {
        let b = backend.clone();
        tasks.spawn(async move {
            prune(&b, Some(50), now).await;
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("a writer");
    }
    let finished = exact(&backend, "concurrent writes").await;
    // A last prune folds what the others left (retries and deletes after a prune may have
    // left fewer than it keeps).
    prune(&backend, Some(50), 0).await;
    assert_eq!(exact(&backend, "a last prune").await, finished.min(50));
    assert_eq!(bucket_rows(&backend).await.1, 0, "one row per minute");
}

/// The count since a time within a minute reads that minute's rows of `jobs` and the buckets of
/// the minutes after it, not their rows: a bucket row added by hand is counted, and the plan's
/// scans of `jobs` return only the rows of the first, partial minute.
#[tokio::test]
async fn finished_since_reads_the_buckets_of_whole_minutes() {
    let backend = fresh_backend().await;
    put(
        &backend,
        (0..50).map(|_| new_job("e", "c")).collect(),
        at(0),
    )
    .await;
    let leased = fetch(&backend, "c", 50, 500).await;
    complete(&backend, &leased[..40], 10_000).await;
    complete(&backend, &leased[40..44], 70_000).await;
    complete(&backend, &leased[44..], 130_000).await;
    let since = at(65_000);
    assert_eq!(kept(&backend, "c", since).await, 10);

    let quoted = format!("\"{}\"", backend.schema_name());
    let statement = include_str!("../../src/sql/finished_since.sql").replace("{schema}", &quoted);
    let plan: serde_json::Value =
        sqlx::query_scalar(&format!("EXPLAIN (ANALYZE, FORMAT JSON) {statement}"))
            .bind("c")
            .bind(since)
            .fetch_one(backend.pool())
            .await
            .expect("explain");
    assert_eq!(rows_read(&plan[0]["Plan"], "jobs"), 4, "{plan:#}");
    assert!(
        rows_read(&plan[0]["Plan"], "finished_minutes") >= 1,
        "{plan:#}"
    );

    sqlx::query(&format!(
        "INSERT INTO {quoted}.finished_minutes (queue, minute, n) VALUES ('c', $1, 1000)"
    ))
    .bind(at(5 * MINUTE))
    .execute(backend.pool())
    .await
    .expect("a bucket by hand");
    assert_eq!(kept(&backend, "c", since).await, 1_010);
    assert_eq!(kept(&backend, "c", at(6 * MINUTE)).await, 0);
}

/// The rows the scans of `relation` in `plan` and its subplans returned, over all their loops.
fn rows_read(plan: &serde_json::Value, relation: &str) -> u64 {
    let own = if plan["Relation Name"] == relation {
        plan["Actual Rows"].as_u64().unwrap_or(0) * plan["Actual Loops"].as_u64().unwrap_or(0)
    } else {
        0
    };
    let below = plan["Plans"].as_array().into_iter().flatten();
    own + below.map(|p| rows_read(p, relation)).sum::<u64>()
}

/// A prune that removes jobs of a minute holding one row folds what it takes off into that
/// row: each minute keeps one row, however the prunes and the writes fall.
#[tokio::test]
async fn a_prune_leaves_one_row_for_a_minute_it_takes_jobs_from() {
    let backend = fresh_backend().await;
    put(&backend, (0..6).map(|_| new_job("e", "c")).collect(), at(0)).await;
    let leased = fetch(&backend, "c", 6, 0).await;
    complete(&backend, &leased, 1_000).await;
    assert_eq!(bucket_rows(&backend).await, (1, 0), "one write, one row");
    assert_eq!(prune(&backend, Some(2), 2_000).await, 4);
    assert_eq!(
        bucket_rows(&backend).await,
        (1, 0),
        "the prune folded into it"
    );
    assert_eq!(exact(&backend, "a prune").await, 2);
}
