//! Fresh, isolated backends, jobs to store, and the job types of these tests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use jobs_core::{
    Backend, Backoff, CompleteParams, Completion, EnqueueParams, FetchParams, JobError, JobId,
    LeasedJob, NewJob, QueueFlow, Timestamp,
};
use jobs_macros::job;
use jobs_postgres::PgBackend;
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

/// The test database.
pub(crate) fn url() -> String {
    std::env::var("JOBS_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

/// The test database's URL with the query-string `options` added.
pub(crate) fn url_with(options: &str) -> String {
    let url = url();
    let joiner = if url.contains('?') { '&' } else { '?' };
    format!("{url}{joiner}{options}")
}

/// A small pool on the test database.
pub(crate) async fn pool() -> PgPool {
    PgPoolOptions::new()
        .max_connections(4)
        .connect(&url())
        .await
        .expect("the test database is reachable")
}

/// A new schema name: `jobs_test_<unix seconds>_<random>`.
pub(crate) fn new_schema() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("jobs_test_{secs}_{}", &random[..12])
}

/// A migrated backend in a schema of its own, on a pool of at most 4 connections.
pub(crate) async fn fresh_backend() -> PgBackend {
    backend_in(&new_schema()).await
}

/// A migrated backend in `schema` (shared by the processes of one test).
pub(crate) async fn backend_in(schema: &str) -> PgBackend {
    let pool = pool().await;
    drop_stale_schemas(&pool).await;
    let backend = PgBackend::from_pool(pool)
        .schema(schema)
        .expect("a valid schema name");
    backend.migrate().await.expect("migrations apply");
    backend
}

/// Drops, once per process, the schemas that test runs more than an hour ago left behind.
async fn drop_stale_schemas(pool: &PgPool) {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::SeqCst) {
        return;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'jobs\\_test\\_%'",
    )
    .fetch_all(pool)
    .await
    .unwrap_or_default();
    for name in names {
        let born = name
            .split('_')
            .nth(2)
            .and_then(|secs| secs.parse::<u64>().ok());
        if born.is_some_and(|born| born + 3600 < now) {
            // Names come from the catalog and match `jobs_test_<digits>_<hex>`: safe to quote.
            let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE"))
                .execute(pool)
                .await;
        }
    }
}

/// A fixed instant with whole milliseconds, so it is stored exactly.
pub(crate) fn t0() -> Timestamp {
    "2030-01-01T00:00:00Z".parse().expect("valid time")
}

/// `t0` plus `ms` milliseconds.
pub(crate) fn at(ms: i64) -> Timestamp {
    t0() + chrono::Duration::milliseconds(ms)
}

/// A job of `name` in `queue`, ready at `t0`, with 3 attempts.
pub(crate) fn new_job(name: &str, queue: &str) -> NewJob {
    NewJob {
        id: JobId::new(),
        name: name.to_string(),
        queue: queue.to_string(),
        payload: serde_json::value::to_raw_value(&serde_json::json!({ "n": 1 })).unwrap(),
        version: 1,
        priority: 0,
        run_at: t0(),
        max_attempts: 3,
        backoff: Backoff::fixed(Duration::from_secs(1)),
        timeout: None,
        unique_key: None,
        trace_context: None,
        tags: Vec::new(),
        key_limits: None,
        coalesce: None,
        step: None,
    }
}

/// Stores `jobs` at `now` and returns their ids.
pub(crate) async fn put(backend: &impl Backend, jobs: Vec<NewJob>, now: Timestamp) -> Vec<JobId> {
    let stored = backend
        .enqueue(EnqueueParams { jobs, now })
        .await
        .expect("enqueue");
    stored.into_iter().map(|e| e.id).collect()
}

/// Completes `leased` at `now_ms`, answering which completions were accepted.
pub(crate) async fn complete(backend: &PgBackend, leased: &[LeasedJob], now_ms: i64) -> Vec<bool> {
    let items = leased
        .iter()
        .map(|j| Completion {
            lease: j.lease(),
            result: serde_json::value::to_raw_value(&1).unwrap(),
        })
        .collect();
    backend
        .complete(CompleteParams {
            items,
            now: at(now_ms),
        })
        .await
        .expect("complete")
}

/// Leases up to `limit` jobs of `queue` at `now_ms` as worker `w`, with a 60 s lease.
pub(crate) async fn fetch(
    backend: &PgBackend,
    queue: &str,
    limit: usize,
    now_ms: i64,
) -> Vec<LeasedJob> {
    fetch_within(backend, queue, limit, now_ms, Vec::new()).await
}

/// [`fetch`], enforcing `flow`.
pub(crate) async fn fetch_within(
    backend: &PgBackend,
    queue: &str,
    limit: usize,
    now_ms: i64,
    flow: Vec<QueueFlow>,
) -> Vec<LeasedJob> {
    fetch_of(backend, &[queue], limit, now_ms, flow).await
}

/// Leases up to `limit` jobs of `queues` at `now_ms` as worker `w`, with a 60 s lease,
/// enforcing `flow`.
pub(crate) async fn fetch_of(
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

/// The number of jobs stored in the `jobs` table of `schema`.
pub(crate) async fn rows_in(pool: &PgPool, schema: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM \"{schema}\".jobs"))
        .fetch_one(pool)
        .await
        .expect("count the jobs")
}

/// A job that returns `n` (these tests only enqueue and read it).
#[job(crate = "jobs_core", queue = "record")]
pub(crate) async fn record(n: u64) -> Result<u64, JobError> {
    Ok(n)
}
