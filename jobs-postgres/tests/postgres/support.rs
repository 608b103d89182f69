//! Fresh, isolated backends and the job types of these tests.

use std::sync::atomic::{AtomicBool, Ordering};

use jobs_core::{Job, JobContext, JobError, JobOptions, StateMap};
use jobs_postgres::PgBackend;
use serde::{Deserialize, Serialize};
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

/// The test database.
pub fn url() -> String {
    std::env::var("JOBS_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

/// A small pool on the test database.
pub async fn pool() -> PgPool {
    PgPoolOptions::new()
        .max_connections(4)
        .connect(&url())
        .await
        .expect("the test database is reachable")
}

/// A new schema name: `jobs_test_<unix seconds>_<random>`.
pub fn new_schema() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("jobs_test_{secs}_{}", &random[..12])
}

/// A migrated backend in a schema of its own, on a pool of at most 4 connections.
pub async fn fresh_backend() -> PgBackend {
    backend_in(&new_schema()).await
}

/// A migrated backend in `schema` (shared by the processes of one test).
pub async fn backend_in(schema: &str) -> PgBackend {
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

/// A job that returns `n` (these tests only enqueue and read it).
#[derive(Serialize, Deserialize)]
pub struct Record {
    pub n: u64,
}

impl Record {
    /// The job of `n`.
    pub fn new(n: u64) -> Self {
        Record { n }
    }
}

impl Job for Record {
    const NAME: &'static str = "record";
    type Output = u64;

    fn options() -> JobOptions {
        JobOptions {
            queue: "record".into(),
            ..Default::default()
        }
    }

    async fn run(self, _ctx: JobContext, _state: StateMap) -> Result<u64, JobError> {
        Ok(self.n)
    }
}
