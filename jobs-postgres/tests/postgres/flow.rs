//! Flow control as PostgreSQL keeps it: the limits in `queue_flow`, seen by every backend of
//! the schema; keyed jobs left to the limited fetch; the running jobs counted once a queue gets
//! a concurrency; the log of starts trimmed to the windows; a refused enqueue in the caller's
//! transaction leaving the transaction usable.

use std::time::Duration;

use jobs_core::{
    Backend, CompleteParams, Completion, Error, FetchParams, FlowParams, KeyLimits, LeasedJob,
    Producer, QueueFlow, QueueLimits, Rate, ReadParams, SetLimitsParams,
};
use jobs_postgres::PgBackend;

use crate::support::{at, backend_in, fetch, fetch_within, fresh_backend, new_job, put, t0};

async fn limit(backend: &PgBackend, queue: &str, limits: QueueLimits) {
    backend
        .set_limits(SetLimitsParams {
            queue: queue.into(),
            limits,
        })
        .await
        .expect("set limits");
}

async fn flow(backend: &PgBackend) -> Vec<QueueFlow> {
    backend.flow(FlowParams {}).await.expect("flow")
}

/// Leases up to `limit` jobs of `queue` at `now_ms` with the flow the store reports.
async fn fetch_flowing(
    backend: &PgBackend,
    queue: &str,
    limit: usize,
    now_ms: i64,
) -> Vec<LeasedJob> {
    fetch_within(backend, queue, limit, now_ms, flow(backend).await).await
}

async fn scalar(backend: &PgBackend, query: &str) -> i64 {
    let query = query.replace("{schema}", &format!("\"{}\"", backend.schema_name()));
    sqlx::query_scalar(&query)
        .fetch_one(backend.pool())
        .await
        .expect("query")
}

#[tokio::test]
async fn the_migration_adds_the_flow_tables_and_columns() {
    let backend = fresh_backend().await;
    let schema = backend.schema_name();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables
         WHERE table_schema = $1 AND table_name IN ('queue_flow', 'flow_starts', 'coalesce_keys')
         ORDER BY table_name",
    )
    .bind(schema)
    .fetch_all(backend.pool())
    .await
    .unwrap();
    assert_eq!(tables, ["coalesce_keys", "flow_starts", "queue_flow"]);
    let columns: Vec<String> = sqlx::query_scalar(
        "SELECT column_name::text FROM information_schema.columns
         WHERE table_schema = $1 AND table_name = 'jobs'
           AND column_name IN ('key_limits', 'flow_counted')
         ORDER BY column_name",
    )
    .bind(schema)
    .fetch_all(backend.pool())
    .await
    .unwrap();
    assert_eq!(columns, ["flow_counted", "key_limits"]);
    let index: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = 'jobs_flow_running'",
    )
    .bind(schema)
    .fetch_one(backend.pool())
    .await
    .unwrap();
    assert_eq!(index, 1);
}

#[tokio::test]
async fn limits_set_by_one_backend_hold_for_another_on_the_schema() {
    let first = fresh_backend().await;
    let limits = QueueLimits::default()
        .concurrency(4)
        .rate(Rate::new(100, Duration::from_millis(1_500)))
        .max_depth(10);
    limit(&first, "mail", limits).await;
    // A new pool and backend, as another process (or this one restarted) has.
    let second = backend_in(first.schema_name()).await;
    assert_eq!(
        flow(&second).await,
        [QueueFlow {
            queue: "mail".into(),
            limits,
            keyed: false,
        }]
    );
    let stored = scalar(
        &second,
        "SELECT count(*) FROM {schema}.queue_flow
         WHERE queue = 'mail' AND concurrency = 4 AND rate_limit = 100
           AND rate_period_ms = 1500 AND max_depth = 10",
    )
    .await;
    assert_eq!(stored, 1);
    limit(&second, "mail", QueueLimits::default()).await;
    assert_eq!(flow(&first).await, []);
    assert_eq!(
        scalar(&first, "SELECT count(*) FROM {schema}.queue_flow").await,
        0
    );
}

#[tokio::test]
async fn a_plain_fetch_leaves_keyed_jobs_to_the_limited_fetch() {
    let backend = fresh_backend().await;
    let mut keyed = new_job("k", "q");
    keyed.key_limits = Some(KeyLimits {
        key: "customer:7".into(),
        concurrency: Some(1),
        rate: None,
    });
    let ids = put(&backend, vec![keyed, new_job("plain", "q")], t0()).await;
    let plain = fetch(&backend, "q", 10, 0).await;
    assert_eq!(
        plain.iter().map(|j| j.record.id).collect::<Vec<_>>(),
        [ids[1]],
        "a fetch told of no keyed queue takes only unkeyed jobs"
    );
    let limited = fetch_flowing(&backend, "q", 10, 0).await;
    assert_eq!(limited.len(), 1);
    assert_eq!(limited[0].record.id, ids[0]);
    assert_eq!(
        limited[0].record.key_limits.as_ref().unwrap().key,
        "customer:7"
    );
    let counted = scalar(
        &backend,
        "SELECT count(*) FROM {schema}.jobs WHERE flow_counted AND lease_expires_at IS NOT NULL",
    )
    .await;
    assert_eq!(counted, 1, "only the limited fetch's lease is counted");
}

#[tokio::test]
async fn jobs_running_when_a_queue_gets_a_concurrency_count_against_it() {
    let backend = fresh_backend().await;
    put(&backend, (0..4).map(|_| new_job("c", "q")).collect(), t0()).await;
    let running = fetch(&backend, "q", 2, 0).await;
    assert_eq!(running.len(), 2);
    limit(&backend, "q", QueueLimits::default().concurrency(2)).await;
    assert!(fetch_flowing(&backend, "q", 10, 0).await.is_empty());
    let done = backend
        .complete(CompleteParams {
            items: vec![Completion {
                lease: running[0].lease(),
                result: serde_json::value::to_raw_value(&()).unwrap(),
            }],
            now: at(1),
        })
        .await
        .unwrap();
    assert_eq!(done, [true]);
    assert_eq!(fetch_flowing(&backend, "q", 10, 1).await.len(), 1);
}

#[tokio::test]
async fn only_a_queue_with_a_concurrency_marks_its_leases_counted() {
    let backend = fresh_backend().await;
    let rate = Rate::new(100, Duration::from_secs(1));
    limit(&backend, "rated", QueueLimits::default().rate(rate)).await;
    limit(
        &backend,
        "capped",
        QueueLimits::default().concurrency(3).rate(rate),
    )
    .await;
    let mut jobs: Vec<_> = (0..3).map(|_| new_job("r", "rated")).collect();
    jobs.extend((0..3).map(|_| new_job("c", "capped")));
    put(&backend, jobs, t0()).await;
    let counted = "SELECT queue || ':' || count(*) FILTER (WHERE flow_counted)
                   || '/' || count(*)
                   FROM {schema}.jobs WHERE lease_expires_at IS NOT NULL
                   GROUP BY queue ORDER BY queue";
    let leased = fetch_queues(&backend, &["capped", "rated"], 4, 0, flow(&backend).await).await;
    assert_eq!(leased.len(), 4, "one fetch over both queues");
    let per_queue: Vec<String> =
        sqlx::query_scalar(&counted.replace("{schema}", &format!("\"{}\"", backend.schema_name())))
            .fetch_all(backend.pool())
            .await
            .unwrap();
    let capped = leased
        .iter()
        .filter(|j| &*j.record.queue == "capped")
        .count();
    assert_eq!(
        per_queue,
        [
            format!("capped:{capped}/{capped}"),
            format!("rated:0/{}", 4 - capped)
        ],
        "the rated queue's leases stay out of jobs_flow_running"
    );
    // Given a concurrency of 1 later, the rated queue counts the jobs it leased before.
    limit(
        &backend,
        "rated",
        QueueLimits::default().concurrency(1).rate(rate),
    )
    .await;
    assert!(fetch_flowing(&backend, "rated", 10, 1).await.is_empty());
}

#[tokio::test]
async fn the_log_of_starts_keeps_only_the_rows_inside_a_window() {
    let backend = fresh_backend().await;
    limit(
        &backend,
        "q",
        QueueLimits::default().rate(Rate::new(2, Duration::from_secs(1))),
    )
    .await;
    put(&backend, (0..10).map(|_| new_job("r", "q")).collect(), t0()).await;
    let rows = "SELECT count(*) FROM {schema}.flow_starts WHERE queue = 'q' AND key IS NULL";
    // The running total the fetches count: the sum of the queue's log rows.
    let total = "SELECT n FROM {schema}.flow_started WHERE queue = 'q'";
    assert_eq!(fetch_flowing(&backend, "q", 1, 0).await.len(), 1);
    assert_eq!(fetch_flowing(&backend, "q", 5, 500).await.len(), 1);
    assert_eq!(scalar(&backend, rows).await, 2, "a row per fetch batch");
    assert_eq!(scalar(&backend, total).await, 2);
    assert_eq!(fetch_flowing(&backend, "q", 5, 1_000).await.len(), 1);
    assert_eq!(
        scalar(&backend, rows).await,
        2,
        "the row of t0 left the window and the log"
    );
    assert_eq!(scalar(&backend, total).await, 2);
    assert_eq!(fetch_flowing(&backend, "q", 5, 2_500).await.len(), 2);
    assert_eq!(scalar(&backend, rows).await, 1);
    assert_eq!(scalar(&backend, total).await, 2);
    assert!(fetch_flowing(&backend, "q", 5, 3_499).await.is_empty());
    assert_eq!(fetch_flowing(&backend, "q", 5, 5_000).await.len(), 2);
    assert_eq!(
        scalar(&backend, total).await,
        2,
        "the batch of 2,500 left as the one of 5,000 came"
    );
}

#[tokio::test]
async fn a_refused_enqueue_leaves_the_callers_transaction_usable() {
    let backend = fresh_backend().await;
    limit(&backend, "bounded", QueueLimits::default().max_depth(1)).await;
    put(&backend, vec![new_job("b", "bounded")], t0()).await;
    let mut tx = backend.pool().begin().await.unwrap();
    let refused = backend
        .on(&mut tx)
        .enqueue_jobs(vec![new_job("b", "bounded")], t0())
        .await;
    assert!(
        matches!(refused, Err(Error::QueueFull { max_depth: 1, .. })),
        "{refused:?}"
    );
    let other = new_job("o", "open");
    let id = other.id;
    backend
        .on(&mut tx)
        .enqueue_jobs(vec![other], t0())
        .await
        .expect("the transaction goes on");
    tx.commit().await.unwrap();
    let stored = backend.read(ReadParams { id }).await.unwrap();
    assert!(stored.is_some(), "committed with the transaction");
    let waiting = scalar(
        &backend,
        "SELECT count(*) FROM {schema}.jobs WHERE queue = 'bounded'",
    )
    .await;
    assert_eq!(waiting, 1);
}

/// A queue's limits hold across both limited fetches: the one of queues without keyed jobs
/// (`fetch_unkeyed`, 0011) and the keyed one (`fetch_limited`), which a queue's fetches switch
/// to once a job with key limits is enqueued into it. They keep one log of starts and one
/// running total, and count each other's leases.
#[tokio::test]
async fn both_limited_fetches_share_a_queues_limits() {
    let backend = fresh_backend().await;
    let limits = QueueLimits::default()
        .concurrency(4)
        .rate(Rate::new(3, Duration::from_secs(1)));
    limit(&backend, "q", limits).await;
    put(&backend, (0..8).map(|_| new_job("r", "q")).collect(), t0()).await;
    let rows = "SELECT COALESCE(sum(n), 0)::int8 FROM {schema}.flow_starts
                WHERE queue = 'q' AND key IS NULL";
    let total = "SELECT n FROM {schema}.flow_started WHERE queue = 'q'";
    assert!(!flow(&backend).await[0].keyed);
    let mut running = fetch_flowing(&backend, "q", 2, 0).await;
    assert_eq!(running.len(), 2);
    running.extend(fetch_flowing(&backend, "q", 5, 500).await);
    assert_eq!(running.len(), 3, "the rate");
    running.extend(fetch_flowing(&backend, "q", 5, 1_000).await);
    assert_eq!(
        running.len(),
        4,
        "the two starts of 0 left the window; the concurrency holds"
    );
    assert_eq!(
        scalar(&backend, total).await,
        2,
        "pruned and logged at once"
    );
    assert_eq!(scalar(&backend, rows).await, 2);

    let mut keyed = new_job("k", "q");
    keyed.key_limits = Some(KeyLimits {
        key: "customer:7".into(),
        concurrency: Some(1),
        rate: None,
    });
    put(&backend, vec![keyed], t0()).await;
    assert!(
        flow(&backend).await[0].keyed,
        "the queue's fetches are keyed now"
    );
    assert!(
        fetch_flowing(&backend, "q", 5, 1_200).await.is_empty(),
        "the keyed fetch counts the other's leases"
    );
    let items = running[..2]
        .iter()
        .map(|job| Completion {
            lease: job.lease(),
            result: serde_json::value::to_raw_value(&()).unwrap(),
        })
        .collect();
    let done = backend
        .complete(CompleteParams {
            items,
            now: at(1_250),
        })
        .await
        .unwrap();
    assert_eq!(done, [true, true]);
    assert_eq!(
        fetch_flowing(&backend, "q", 5, 1_300).await.len(),
        1,
        "room for two running, for one more start within the rate"
    );
    assert_eq!(scalar(&backend, total).await, 3);
    assert_eq!(scalar(&backend, rows).await, 3);
}

/// A limited fetch that leases nothing still takes the starts that left the window off the
/// queue's running total, so the total stays the sum of the log and the next jobs start.
#[tokio::test]
async fn a_fetch_that_leases_nothing_still_prunes_the_total() {
    let backend = fresh_backend().await;
    let rate = Rate::new(3, Duration::from_secs(1));
    limit(&backend, "q", QueueLimits::default().rate(rate)).await;
    put(&backend, (0..3).map(|_| new_job("r", "q")).collect(), t0()).await;
    let rows = "SELECT COALESCE(sum(n), 0)::int8 FROM {schema}.flow_starts WHERE queue = 'q'";
    let total = "SELECT n FROM {schema}.flow_started WHERE queue = 'q'";
    assert_eq!(fetch_flowing(&backend, "q", 5, 0).await.len(), 3);
    assert_eq!(scalar(&backend, total).await, 3);
    assert!(
        fetch_flowing(&backend, "q", 5, 1_000).await.is_empty(),
        "no job is ready"
    );
    assert_eq!(scalar(&backend, total).await, 0, "the starts of 0 left");
    assert_eq!(scalar(&backend, rows).await, 0);
    put(
        &backend,
        (0..4).map(|_| new_job("r", "q")).collect(),
        at(1_000),
    )
    .await;
    assert_eq!(fetch_flowing(&backend, "q", 5, 1_100).await.len(), 3);
    assert_eq!(scalar(&backend, total).await, 3);
}

/// A rate far from its limit leaves its log to be pruned an eighth of its period after the last
/// prune: a row out of the window may stay until then, counted, while the room it leaves is
/// more than a fetch takes.
#[tokio::test]
async fn a_rate_with_room_prunes_its_log_an_eighth_of_a_period_after_the_last_prune() {
    let backend = fresh_backend().await;
    let rate = Rate::new(100, Duration::from_secs(1));
    limit(&backend, "q", QueueLimits::default().rate(rate)).await;
    put(&backend, (0..10).map(|_| new_job("r", "q")).collect(), t0()).await;
    // The log's rows, as ms after t0.
    let rows = format!(
        "SELECT string_agg(((extract(epoch FROM at) * 1000)::int8 - {})::text, ',' ORDER BY at)
         FROM \"{}\".flow_starts WHERE queue = 'q'",
        t0().timestamp_millis(),
        backend.schema_name()
    );
    let total = "SELECT n FROM {schema}.flow_started WHERE queue = 'q'";
    for (now, log_after) in [
        (0, vec![0]),
        (100, vec![0, 100]),
        // Due (the last prune was at 0): the row of 0 leaves; that of 100 is in the window.
        (1_050, vec![100, 1_050]),
        // Not due until 1,175: the row of 100 left the window but stays, counted.
        (1_100, vec![100, 1_050, 1_100]),
        (1_200, vec![1_050, 1_100, 1_200]),
    ] {
        assert_eq!(fetch_flowing(&backend, "q", 1, now).await.len(), 1);
        let log: String = sqlx::query_scalar(&rows)
            .fetch_one(backend.pool())
            .await
            .expect("log");
        let expected: Vec<String> = log_after.iter().map(i64::to_string).collect();
        assert_eq!(log, expected.join(","), "the log after {now} ms");
        let logged = i64::try_from(log_after.len()).unwrap();
        assert_eq!(
            scalar(&backend, total).await,
            logged,
            "the total after {now}"
        );
    }
}

/// Fetches racing from many connections never lease beyond a queue's concurrency or its rate,
/// whether they go through `fetch_unkeyed` or (told the queues are keyed) `fetch_limited`,
/// and the running total of the starts stays the sum of the log.
#[tokio::test]
async fn racing_fetches_of_both_functions_hold_the_limits_and_the_total() {
    let backend = fresh_backend().await;
    limit(&backend, "c", QueueLimits::default().concurrency(5)).await;
    let rate = Rate::new(7, Duration::from_secs(60));
    limit(&backend, "r", QueueLimits::default().rate(rate)).await;
    for queue in ["c", "r"] {
        put(
            &backend,
            (0..40).map(|_| new_job("e", queue)).collect(),
            t0(),
        )
        .await;
    }
    let unkeyed = flow(&backend).await;
    let keyed: Vec<QueueFlow> = unkeyed
        .iter()
        .cloned()
        .map(|f| QueueFlow { keyed: true, ..f })
        .collect();
    let racers = (0..8).map(|i| {
        let backend = backend.clone();
        let flow = if i % 2 == 0 {
            unkeyed.clone()
        } else {
            keyed.clone()
        };
        tokio::spawn(async move {
            let mut leased = Vec::new();
            for round in 0..4 {
                let queues = match (i + round) % 3 {
                    0 => vec!["c", "r"],
                    1 => vec!["c"],
                    _ => vec!["r"],
                };
                leased.extend(fetch_queues(&backend, &queues, 3, i, flow.clone()).await);
            }
            leased
        })
    });
    let mut leased = Vec::new();
    for racer in racers.collect::<Vec<_>>() {
        leased.extend(racer.await.expect("racer"));
    }
    let count = |queue: &str| leased.iter().filter(|j| *j.record.queue == *queue).count();
    assert_eq!(count("c"), 5, "the concurrency");
    assert_eq!(count("r"), 7, "the rate");
    let total = "SELECT n FROM {schema}.flow_started WHERE queue = 'r'";
    let rows = "SELECT sum(n)::int8 FROM {schema}.flow_starts WHERE queue = 'r'";
    assert_eq!(scalar(&backend, total).await, 7);
    assert_eq!(scalar(&backend, rows).await, 7);
}

/// Leases up to `limit` jobs of `queues` at `now_ms` under `flow`.
async fn fetch_queues(
    backend: &PgBackend,
    queues: &[&str],
    limit: usize,
    now_ms: i64,
    flow: Vec<QueueFlow>,
) -> Vec<LeasedJob> {
    backend
        .fetch(FetchParams {
            ended: Vec::new(),
            known: None,
            queues: queues.iter().map(|q| q.to_string()).collect(),
            limit,
            worker: "w".into(),
            lease_for: Duration::from_secs(60),
            now: at(now_ms),
            flow,
            reserve: 0,
            deliver: 0,
        })
        .await
        .expect("fetch")
}
