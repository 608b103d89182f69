//! Liveness: each worker holds a session advisory lock on a connection of its own, outside the
//! pool, and lists itself in the `liveness` table once the lock is held. PostgreSQL drops the
//! lock the moment the worker's process dies (its socket closes, its session ends), so any
//! other worker sees it gone with one statement: trying each listed worker's lock for the
//! length of a transaction succeeds only when nobody holds it.
//!
//! The connection is checked every second; when it breaks, jobs-core's
//! [`LivenessKeeper::keep`] takes the lock again on a new one.

use std::sync::Arc;
use std::time::Duration;

use jobs_core::{liveness, Error, Hold, Liveness};
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection, PgExecutor, PgPool};

use crate::error::db;
use crate::sql::Sql;

/// The start of the holding connection's `application_name` (`jobs-liveness:<schema>`).
const APPLICATION_NAME: &str = "jobs-liveness";
/// How often the held connection is checked.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Starts holding `worker`'s liveness on a connection of its own; the hold ends when the
/// returned [`Liveness`] is dropped.
pub(crate) fn hold(pool: &PgPool, sql: Arc<Sql>, worker: String) -> Liveness {
    let (keeper, liveness) = liveness();
    let options = (*pool.connect_options())
        .clone()
        .application_name(&format!("{APPLICATION_NAME}:{}", sql.schema.name()));
    let lock = Lock {
        options,
        sql,
        worker: worker.clone(),
    };
    tokio::spawn(keeper.keep(worker, lock));
    liveness
}

/// A worker's liveness lock.
struct Lock {
    options: PgConnectOptions,
    sql: Arc<Sql>,
    worker: String,
}

impl Hold for Lock {
    type Conn = PgConnection;

    /// A new connection holding the worker's lock, the worker listed as holding it.
    async fn take(&mut self) -> Result<PgConnection, Error> {
        let mut conn = PgConnection::connect_with(&self.options)
            .await
            .map_err(db)?;
        let locked: bool = sqlx::query_scalar(&self.sql.liveness_hold)
            .bind(&self.worker)
            .fetch_one(&mut conn)
            .await
            .map_err(db)?;
        if !locked {
            return Err(Error::backend(format!(
                "another session holds the liveness lock of worker `{}`",
                self.worker
            )));
        }
        sqlx::query(&self.sql.liveness_register)
            .bind(&self.worker)
            .execute(&mut conn)
            .await
            .map_err(db)?;
        Ok(conn)
    }

    async fn broken(conn: &mut PgConnection) {
        loop {
            tokio::time::sleep(CHECK_EVERY).await;
            if conn.ping().await.is_err() {
                return;
            }
        }
    }
}

/// The listed workers whose lock nobody holds.
pub(crate) async fn gone<'e>(sql: &Sql, exec: impl PgExecutor<'e>) -> Result<Vec<String>, Error> {
    sqlx::query_scalar(&sql.gone_workers)
        .fetch_all(exec)
        .await
        .map_err(db)
}
