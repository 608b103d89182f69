//! The backends the bench runs on, each reset to a fresh state before a workload.

use jobs::AnyBackend;
use jobs_core::{
    Backend, Clock, CompleteParams, Completion, EnqueueParams, ErrorKind, ErrorReport, FailParams,
    Failure, FetchParams,
};

/// Which backend, from `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BackendKind {
    Memory,
    Postgres,
    Redis,
}

impl BackendKind {
    pub(crate) fn parse(name: &str) -> Self {
        match name {
            "postgres" => BackendKind::Postgres,
            "redis" => BackendKind::Redis,
            _ => BackendKind::Memory,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            BackendKind::Memory => "memory",
            BackendKind::Postgres => "postgres",
            BackendKind::Redis => "redis",
        }
    }

    /// The backend as the JSON lines name it: its name, and `+streams` for Redis in the layout
    /// on streams (`--layout streams`).
    pub(crate) fn label(self) -> String {
        match (self, redis_layout()) {
            (BackendKind::Redis, Some(layout)) => format!("redis+{layout}"),
            _ => self.name().to_string(),
        }
    }

    /// Whether other processes see the same store (so producers and workers can be processes).
    pub(crate) fn shared_across_processes(self) -> bool {
        self != BackendKind::Memory
    }
}

/// The protocol's PostgreSQL database and Redis db index.
#[cfg(feature = "postgres")]
pub(crate) const POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/bench_jobs";
#[cfg(feature = "redis")]
pub(crate) const REDIS_URL: &str = "redis://127.0.0.1:6379/5";

/// The Redis layout other than the default that `--layout` asks for.
static REDIS_LAYOUT: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Lays the bench's Redis stores out as `layout` (`hash`, the default, or `streams`).
pub(crate) fn set_redis_layout(layout: &str) {
    if layout != "hash" {
        REDIS_LAYOUT.set(layout.to_string()).expect("set once");
    }
}

/// The Redis layout other than the default that `--layout` asks for, if any.
fn redis_layout() -> Option<&'static str> {
    REDIS_LAYOUT.get().map(String::as_str)
}

/// The URL of the bench's Redis store under `prefix` (the default one: none).
#[cfg(feature = "redis")]
fn redis_url(prefix: Option<&str>) -> String {
    let options: Vec<String> = prefix
        .map(|p| format!("prefix={p}"))
        .into_iter()
        .chain(redis_layout().map(|l| format!("layout={l}")))
        .collect();
    match options.is_empty() {
        true => REDIS_URL.to_string(),
        false => format!("{REDIS_URL}?{}", options.join("&")),
    }
}

/// Connects to the bench's store as it is.
pub(crate) async fn connect(kind: BackendKind) -> AnyBackend {
    match kind {
        BackendKind::Memory => AnyBackend::new(jobs::MemoryBackend::new()),
        #[cfg(feature = "postgres")]
        BackendKind::Postgres => jobs::connect(POSTGRES_URL).await.expect("PostgreSQL"),
        #[cfg(feature = "redis")]
        BackendKind::Redis => jobs::connect(&redis_url(None)).await.expect("Redis"),
        #[allow(unreachable_patterns)]
        other => panic!("the bench was built without the `{}` feature", other.name()),
    }
}

/// Connects to an emptied store.
pub(crate) async fn fresh_backend(kind: BackendKind) -> AnyBackend {
    match kind {
        BackendKind::Memory => connect(kind).await,
        #[cfg(feature = "postgres")]
        BackendKind::Postgres => {
            postgres::reset().await;
            connect(kind).await
        }
        #[cfg(feature = "redis")]
        BackendKind::Redis => {
            redis::reset().await;
            connect(kind).await
        }
        #[allow(unreachable_patterns)]
        other => connect(other).await,
    }
}

/// The PostgreSQL schema and Redis key prefix of the store beside the bench's own (see
/// [`fresh_aside`]).
#[cfg(any(feature = "postgres", feature = "redis"))]
const ASIDE: &str = "bench_aside";

/// Connects to an emptied store beside the bench's own, which it leaves as it is: a schema of
/// its own on PostgreSQL, a key prefix of its own on Redis, a new instance in memory. W4 drains
/// plain W2 rounds in it while its million retained jobs stay in the bench's store.
pub(crate) async fn fresh_aside(kind: BackendKind) -> AnyBackend {
    match kind {
        #[cfg(feature = "postgres")]
        BackendKind::Postgres => {
            postgres::drop_schema(ASIDE).await;
            let url = format!("{POSTGRES_URL}?schema={ASIDE}");
            jobs::connect(&url).await.expect("PostgreSQL")
        }
        #[cfg(feature = "redis")]
        BackendKind::Redis => {
            redis::delete_prefix(ASIDE).await;
            jobs::connect(&redis_url(Some(ASIDE))).await.expect("Redis")
        }
        _ => connect(kind).await,
    }
}

/// Stores `n` completed jobs in the bench's queue, through the backend's own batched API.
pub(crate) async fn retain_finished(kind: BackendKind, backend: &AnyBackend, n: u64) {
    load(backend, n, false).await;
    settle(kind).await;
}

/// Stores `n` dead jobs in the bench's queue (each failed once with no retry), as
/// [`retain_finished`] stores completed ones.
pub(crate) async fn retain_dead(kind: BackendKind, backend: &AnyBackend, n: u64) {
    load(backend, n, true).await;
    settle(kind).await;
}

/// Enqueues, fetches and then completes (or fails to dead) `n` jobs, in batches.
async fn load(backend: &AnyBackend, n: u64, dead: bool) {
    const BATCH: u64 = 10_000;
    let mut left = n;
    while left > 0 {
        let size = left.min(BATCH);
        let jobs = (0..size)
            .map(|i| {
                let enqueue = jobs::Enqueue::from(super::job(i));
                enqueue
                    .to_new_job(jobs_core::SystemClock.now())
                    .expect("job")
            })
            .collect();
        let now = jobs_core::SystemClock.now();
        backend
            .enqueue(EnqueueParams { jobs, now })
            .await
            .expect("enqueue");
        let leased = backend
            .fetch(FetchParams {
                ended: Vec::new(),
                known: None,
                queues: vec!["email".into()],
                limit: size as usize,
                worker: "bench-setup".into(),
                lease_for: std::time::Duration::from_secs(600),
                now,
                flow: Vec::new(),
                reserve: 0,
                deliver: 0,
            })
            .await
            .expect("fetch");
        if dead {
            let items = leased
                .iter()
                .map(|j| Failure {
                    lease: j.lease(),
                    error: ErrorReport {
                        kind: ErrorKind::Fatal,
                        message: "bench: dead on purpose".into(),
                        chain: Vec::new(),
                    },
                    retry_at: None,
                })
                .collect();
            backend.fail(FailParams { items, now }).await.expect("fail");
        } else {
            let items = leased
                .iter()
                .map(|j| Completion {
                    lease: j.lease(),
                    result: serde_json::value::RawValue::from_string("null".into()).expect("JSON"),
                })
                .collect();
            backend
                .complete(CompleteParams { items, now })
                .await
                .expect("complete");
        }
        left -= size;
    }
}

/// Lets the store reach the steady state a long-running one would be in after a bulk load.
pub(crate) async fn settle(kind: BackendKind) {
    match kind {
        #[cfg(feature = "postgres")]
        BackendKind::Postgres => postgres::vacuum().await,
        _ => {}
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use jobs::postgres::sqlx::{self, Connection, PgConnection};

    /// Creates the bench database if missing and drops the bench's schema.
    pub(super) async fn reset() {
        let mut admin = PgConnection::connect("postgres://postgres@127.0.0.1:5432/postgres")
            .await
            .expect("PostgreSQL");
        let exists: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'bench_jobs')",
        )
        .fetch_one(&mut admin)
        .await
        .expect("query");
        if !exists {
            sqlx::query("CREATE DATABASE bench_jobs")
                .execute(&mut admin)
                .await
                .expect("create database");
        }
        drop_schema("jobs").await;
    }

    /// Drops `schema` of the bench database, with the store in it.
    pub(super) async fn drop_schema(schema: &str) {
        let mut bench = PgConnection::connect(super::POSTGRES_URL)
            .await
            .expect("bench database");
        sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .execute(&mut bench)
            .await
            .expect("drop schema");
    }

    /// Vacuums the jobs table and checkpoints, as autovacuum and the checkpointer would have long
    /// since done for a store that accumulated its retained jobs over time (the bulk load leaves
    /// dead index entries behind, and a checkpoint of its WAL would otherwise run during W4).
    pub(super) async fn vacuum() {
        let mut bench = PgConnection::connect(super::POSTGRES_URL)
            .await
            .expect("bench database");
        sqlx::query("VACUUM (ANALYZE) jobs.jobs")
            .execute(&mut bench)
            .await
            .expect("vacuum");
        sqlx::query("CHECKPOINT")
            .execute(&mut bench)
            .await
            .expect("checkpoint");
    }
}

#[cfg(feature = "redis")]
mod redis {
    use jobs::redis::redis;

    /// Empties db 5 (and only it), then waits for Redis to have freed what it held: a flush of
    /// W4's million jobs would otherwise still be freeing them, on a second core, during the
    /// next workload.
    pub(super) async fn reset() {
        let mut conn = connection().await;
        let _: () = redis::cmd("FLUSHDB")
            .arg("ASYNC")
            .query_async(&mut conn)
            .await
            .expect("FLUSHDB");
        freed(&mut conn).await;
    }

    /// Deletes the keys of the store under `prefix` in db 5 (`{prefix}:…` and `{prefix:…}:…`),
    /// and waits for Redis to have freed them.
    pub(super) async fn delete_prefix(prefix: &str) {
        let mut conn = connection().await;
        let pattern = format!("{{{prefix}[:}}]*");
        let mut cursor = 0u64;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(10_000)
                .query_async(&mut conn)
                .await
                .expect("SCAN");
            if !keys.is_empty() {
                let _: () = redis::cmd("UNLINK")
                    .arg(&keys)
                    .query_async(&mut conn)
                    .await
                    .expect("UNLINK");
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        freed(&mut conn).await;
    }

    /// A connection to db 5.
    async fn connection() -> redis::aio::MultiplexedConnection {
        let client = redis::Client::open(super::REDIS_URL).expect("Redis URL");
        client
            .get_multiplexed_async_connection()
            .await
            .expect("Redis")
    }

    /// Waits until Redis has freed what it unlinked or flushed.
    async fn freed(conn: &mut redis::aio::MultiplexedConnection) {
        loop {
            let info: String = redis::cmd("INFO")
                .arg("memory")
                .query_async(conn)
                .await
                .expect("INFO");
            let pending = info
                .lines()
                .find_map(|l| l.strip_prefix("lazyfree_pending_objects:"))
                .and_then(|n| n.trim().parse::<u64>().ok());
            if pending.is_none_or(|n| n == 0) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}
