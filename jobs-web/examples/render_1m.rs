//! The render time of the overview and of the first page of a list with 1,000,000 completed
//! jobs retained, on PostgreSQL and on Redis.
//!
//! `cargo run -p jobs-web --example render_1m [postgres|redis]` (both when not told; the
//! number of jobs from `JOBS_WEB_BENCH_JOBS`, 1,000,000 unless set). The jobs are stored
//! through the backend's batched API (enqueue, fetch and complete, 10,000 at a time) in a
//! fresh schema or key prefix, removed at the end; each page is then requested 10 times
//! through the router and the median and slowest server times are printed.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use jobs_core::{
    AnyBackend, Backend, Backoff, CompleteParams, Completion, EnqueueParams, FetchParams, JobId,
    NewJob,
};
use jobs_postgres::{sqlx, PgBackend};
use jobs_redis::RedisBackend;
use serde_json::value::RawValue;
use tower::ServiceExt;

const QUEUE: &str = "email";
const BATCH: usize = 10_000;
const RUNS: usize = 10;

#[tokio::main]
async fn main() {
    let n: usize =
        std::env::var("JOBS_WEB_BENCH_JOBS").map_or(1_000_000, |v| v.parse().expect("a number"));
    let which = std::env::args().nth(1);
    if which.as_deref().is_none_or(|w| w == "postgres") {
        let schema = format!("jobs_web_bench_{}", std::process::id());
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(8)
            .connect("postgres://postgres@127.0.0.1:5432/test")
            .await
            .expect("PostgreSQL");
        let backend = PgBackend::from_pool(pool)
            .schema(&schema)
            .expect("a schema");
        backend.migrate().await.expect("migrations");
        let settle = format!("VACUUM ANALYZE \"{schema}\".jobs");
        measure(
            "postgres",
            AnyBackend::new(backend.clone()),
            n,
            Some((&settle, backend.pool())),
        )
        .await;
        let drop = format!("DROP SCHEMA \"{schema}\" CASCADE");
        sqlx::query(&drop)
            .execute(backend.pool())
            .await
            .expect("drop");
    }
    if which.as_deref().is_none_or(|w| w == "redis") {
        let prefix = format!("jw-bench-{}", std::process::id());
        let backend = RedisBackend::connect("redis://127.0.0.1:6379/0")
            .await
            .expect("Redis")
            .prefix(&prefix)
            .expect("a prefix");
        measure("redis", AnyBackend::new(backend), n, None).await;
        remove_keys(&prefix).await;
    }
}

/// Deletes the keys under `prefix` (the backend's keys start with `{prefix`).
async fn remove_keys(prefix: &str) {
    use jobs_redis::redis::AsyncCommands;
    let client = jobs_redis::redis::Client::open("redis://127.0.0.1:6379/0").expect("a URL");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("Redis");
    let keys: Vec<String> = {
        let mut iter = conn
            .scan_match::<_, String>(format!("{{{prefix}*"))
            .await
            .expect("scan");
        let mut keys = Vec::new();
        while let Some(key) = iter.next_item().await {
            keys.push(key.expect("a key"));
        }
        keys
    };
    for chunk in keys.chunks(1_000) {
        let _: () = conn.unlink(chunk).await.expect("unlink");
    }
}

/// Loads `n` completed jobs, runs `settle` (PostgreSQL's `VACUUM ANALYZE`: the steady state
/// autovacuum keeps a long-running store in), then times the pages.
async fn measure(
    store: &str,
    backend: AnyBackend,
    n: usize,
    settle: Option<(&str, &sqlx::PgPool)>,
) {
    let started = Instant::now();
    load(&backend, n).await;
    if let Some((sql, pool)) = settle {
        sqlx::query(sql).execute(pool).await.expect("settle");
    }
    println!(
        "{store}: stored {n} completed jobs in {:.1?}",
        started.elapsed()
    );
    let router = jobs_web::router(backend);
    for path in [
        "/",
        "/jobs?queue=email&status=completed",
        "/jobs",
        "/dead",
        "/api/queues",
    ] {
        let mut times = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            let request = Request::get(path).body(Body::empty()).unwrap();
            let started = Instant::now();
            let response = router.clone().oneshot(request).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            response.into_body().collect().await.unwrap();
            times.push(started.elapsed());
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "{store}: GET {path:<40} median {:>7.1} ms  max {:>7.1} ms",
            ms(times[RUNS / 2]),
            ms(times[RUNS - 1])
        );
    }
}

/// Enqueues, fetches and completes `n` jobs, a batch at a time.
async fn load(backend: &AnyBackend, n: usize) {
    let mut left = n;
    while left > 0 {
        let size = left.min(BATCH);
        let now = chrono::Utc::now();
        let jobs = (0..size).map(|i| new_job(i, now)).collect();
        backend
            .enqueue(EnqueueParams { jobs, now })
            .await
            .expect("enqueue");
        let leased = backend
            .fetch(FetchParams {
                ended: Vec::new(),
                queues: vec![QUEUE.into()],
                limit: size,
                worker: "bench".into(),
                lease_for: Duration::from_secs(600),
                now,
                known: None,
                flow: Vec::new(),
                reserve: 0,
                deliver: 0,
            })
            .await
            .expect("fetch");
        let items = leased
            .iter()
            .map(|j| Completion {
                lease: j.lease(),
                result: RawValue::from_string("null".into()).unwrap(),
            })
            .collect();
        backend
            .complete(CompleteParams { items, now })
            .await
            .expect("complete");
        left -= size;
    }
}

fn new_job(i: usize, now: jobs_core::Timestamp) -> NewJob {
    NewJob {
        id: JobId::new(),
        name: "send_welcome_email".into(),
        queue: QUEUE.into(),
        payload: RawValue::from_string(format!(
            r#"{{"user_id":{i},"email":"user{i}@example.com"}}"#
        ))
        .unwrap(),
        version: 1,
        priority: 0,
        run_at: now,
        max_attempts: 3,
        backoff: Backoff::default(),
        timeout: None,
        unique_key: None,
        trace_context: None,
        tags: Vec::new(),
        key_limits: None,
        coalesce: None,
        step: None,
    }
}
