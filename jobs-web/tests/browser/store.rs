//! Fresh, isolated stores: PostgreSQL in a schema of its own, Redis under a key prefix of its
//! own, removed when the test ends.

use jobs_core::AnyBackend;
use jobs_postgres::{sqlx, PgBackend};
use jobs_redis::RedisBackend;

/// Which store a test runs on.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    Postgres,
    Redis,
}

impl Kind {
    /// Its name in screenshot files.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Postgres => "postgres",
            Kind::Redis => "redis",
        }
    }
}

/// A store of one test.
pub(crate) struct Store {
    /// The backend on it.
    pub(crate) backend: AnyBackend,
    space: Space,
}

/// Where a store's data is, to remove it.
enum Space {
    Schema(PgBackend),
    Prefix(String),
}

fn postgres_url() -> String {
    std::env::var("JOBS_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

fn redis_url() -> String {
    std::env::var("JOBS_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".into())
}

/// A random suffix for a schema or a prefix.
fn random() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..16].to_string()
}

impl Store {
    /// A new, empty store of `kind`.
    pub(crate) async fn fresh(kind: Kind) -> Self {
        match kind {
            Kind::Postgres => {
                let pool = sqlx::postgres::PgPoolOptions::new()
                    .max_connections(8)
                    .connect(&postgres_url())
                    .await
                    .expect("the test database");
                let backend = PgBackend::from_pool(pool)
                    .schema(&format!("jobs_browser_{}", random()))
                    .expect("a valid schema");
                backend.migrate().await.expect("migrations apply");
                Store {
                    backend: AnyBackend::new(backend.clone()),
                    space: Space::Schema(backend),
                }
            }
            Kind::Redis => {
                let prefix = format!("jb-{}", random());
                let backend = RedisBackend::connect(&redis_url())
                    .await
                    .expect("a Redis server")
                    .prefix(&prefix)
                    .expect("a valid prefix");
                Store {
                    backend: AnyBackend::new(backend),
                    space: Space::Prefix(prefix),
                }
            }
        }
    }

    /// Removes what the test stored.
    pub(crate) async fn remove(self) {
        match self.space {
            Space::Schema(backend) => {
                let drop = format!(
                    "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
                    backend.schema_name()
                );
                sqlx::query(&drop)
                    .execute(backend.pool())
                    .await
                    .expect("drop the schema");
            }
            Space::Prefix(prefix) => remove_keys(&prefix).await,
        }
    }
}

/// Deletes the keys under `prefix` (the backend's keys start with `{prefix`).
async fn remove_keys(prefix: &str) {
    use jobs_redis::redis::AsyncCommands;
    let client = jobs_redis::redis::Client::open(redis_url()).expect("a Redis URL");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("Redis");
    let mut keys = Vec::new();
    {
        let mut iter = conn
            .scan_match::<_, String>(format!("{{{prefix}*"))
            .await
            .expect("scan");
        while let Some(key) = iter.next_item().await {
            keys.push(key.expect("a key"));
        }
    }
    for chunk in keys.chunks(500) {
        let _: () = conn.unlink(chunk).await.expect("unlink");
    }
}
