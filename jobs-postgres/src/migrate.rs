//! Applies the embedded migrations to a schema, once, however many workers start together.
//!
//! sqlx's own `Migrator::run` keeps its history in one `_sqlx_migrations` table of the
//! connection's `search_path` and locks per database, so it cannot migrate several schemas
//! side by side. This runner reads the same embedded migrations (`sqlx::migrate!`) and, in one
//! transaction: takes an advisory lock keyed on the schema, creates the schema and its
//! `_jobs_migrations` history table if missing, sets `search_path` for this transaction only,
//! applies each migration not yet recorded, and records it with its checksum. A recorded
//! migration whose checksum changed is an error, as with sqlx.

use jobs_core::Error;
use sqlx::migrate::Migrator;
use sqlx::{Executor, PgConnection, PgPool};

use crate::error::db;
use crate::schema::Schema;

/// The migrations in `jobs-postgres/migrations`.
static MIGRATOR: Migrator = sqlx::migrate!();

/// Brings `schema` up to date.
pub(crate) async fn migrate(pool: &PgPool, schema: &Schema) -> Result<(), Error> {
    let quoted = schema.quoted();
    let setup = format!(
        "CREATE SCHEMA IF NOT EXISTS {quoted};
         SET LOCAL search_path TO {quoted};
         CREATE TABLE IF NOT EXISTS _jobs_migrations (
             version     bigint      PRIMARY KEY,
             description text        NOT NULL,
             checksum    bytea       NOT NULL,
             applied_at  timestamptz NOT NULL DEFAULT now()
         );"
    );
    let mut tx = pool.begin().await.map_err(db)?;
    let conn: &mut PgConnection = &mut tx;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(lock_key(schema.name()))
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    conn.execute(sqlx::raw_sql(&setup)).await.map_err(db)?;
    let applied: Vec<(i64, Vec<u8>)> =
        sqlx::query_as("SELECT version, checksum FROM _jobs_migrations")
            .fetch_all(&mut *conn)
            .await
            .map_err(db)?;
    for migration in MIGRATOR.iter() {
        if migration.migration_type.is_down_migration() {
            continue;
        }
        let recorded = applied
            .iter()
            .find(|(version, _)| *version == migration.version);
        if let Some((_, checksum)) = recorded {
            if *checksum != *migration.checksum {
                return Err(Error::backend(format!(
                    "migration {} ({}) of schema `{}` was changed after it was applied",
                    migration.version,
                    migration.description,
                    schema.name()
                )));
            }
            continue;
        }
        conn.execute(sqlx::raw_sql(&migration.sql))
            .await
            .map_err(db)?;
        sqlx::query(
            "INSERT INTO _jobs_migrations (version, description, checksum) VALUES ($1, $2, $3)",
        )
        .bind(migration.version)
        .bind(&*migration.description)
        .bind(&*migration.checksum)
        .execute(&mut *conn)
        .await
        .map_err(db)?;
        tracing::info!(
            schema = schema.name(),
            version = migration.version,
            "applied migration"
        );
    }
    tx.commit().await.map_err(db)
}

/// The latest migration recorded in `schema`'s `_jobs_migrations`; `None` when the schema or its
/// history table does not exist (never migrated).
pub(crate) async fn applied_version(pool: &PgPool, schema: &Schema) -> Result<Option<i64>, Error> {
    let exists: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = '_jobs_migrations')",
    )
    .bind(schema.name())
    .fetch_one(pool)
    .await
    .map_err(db)?;
    if !exists {
        return Ok(None);
    }
    let sql = format!(
        "SELECT max(version) FROM {}._jobs_migrations",
        schema.quoted()
    );
    sqlx::query_scalar(&sql).fetch_one(pool).await.map_err(db)
}

/// The version of the latest embedded migration: what [`migrate`] brings a schema to.
#[cfg(test)]
fn latest() -> i64 {
    MIGRATOR
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .map(|m| m.version)
        .max()
        .expect("migrations are embedded")
}

/// The advisory lock of one schema's migrations: FNV-1a of a fixed prefix and the name.
fn lock_key(schema: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in "jobs-postgres migrate ".bytes().chain(schema.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_ne_bytes(hash.to_ne_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PgBackend;

    fn url() -> String {
        std::env::var("JOBS_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
    }

    /// A fresh schema reads as never migrated, then as the latest embedded migration.
    #[tokio::test]
    async fn schema_version_is_none_before_migrating_and_the_latest_after() {
        let pool = PgPool::connect(&url()).await.expect("the test database");
        let random = uuid::Uuid::new_v4().simple().to_string();
        let name = format!("jobs_test_version_{}", &random[..12]);
        let backend = PgBackend::from_pool(pool.clone()).schema(&name).unwrap();
        assert_eq!(backend.schema_version().await.unwrap(), None);
        backend.migrate().await.unwrap();
        assert_eq!(backend.schema_version().await.unwrap(), Some(latest()));
        backend.migrate().await.unwrap();
        assert_eq!(backend.schema_version().await.unwrap(), Some(latest()));
        sqlx::query(&format!("DROP SCHEMA \"{name}\" CASCADE"))
            .execute(&pool)
            .await
            .unwrap();
    }
}
