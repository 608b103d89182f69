//! Liveness: each worker holds a session advisory lock on a connection of its own, outside the
//! pool, and lists itself in the `liveness` table once the lock is held. PostgreSQL drops the
//! lock the moment the worker's process dies (its socket closes, its session ends), so any
//! other worker sees it gone with one statement: trying each listed worker's lock for the
//! length of a transaction succeeds only when nobody holds it.
//!
//! The holding task checks its connection every second and, when it breaks, takes the lock
//! again on a new one, retrying with a backoff of up to a second; the worker learns of each
//! loss through its [`LivenessKeeper`].

use std::sync::Arc;
use std::time::Duration;

use jobs_core::{liveness, Error, Liveness, LivenessKeeper};
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection, PgExecutor, PgPool};

use crate::error::db;
use crate::sql::Sql;

/// The start of the holding connection's `application_name` (`jobs-liveness:<schema>`).
const APPLICATION_NAME: &str = "jobs-liveness";
/// How often the held connection is checked.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// The longest pause between attempts to take the lock again.
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// Starts holding `worker`'s liveness on a connection of its own; the hold ends when the
/// returned [`Liveness`] is dropped.
pub(crate) fn hold(pool: &PgPool, sql: Arc<Sql>, worker: String) -> Liveness {
    let (keeper, liveness) = liveness();
    let options = (*pool.connect_options())
        .clone()
        .application_name(&format!("{APPLICATION_NAME}:{}", sql.schema.name()));
    tokio::spawn(keep(options, sql, worker, keeper));
    liveness
}

/// Holds the lock until the worker lets go, taking it again whenever the connection breaks.
async fn keep(options: PgConnectOptions, sql: Arc<Sql>, worker: String, keeper: LivenessKeeper) {
    let mut pause = Duration::from_millis(50);
    loop {
        let taken = tokio::select! {
            _ = keeper.released() => return,
            taken = take(&options, &sql, &worker) => taken,
        };
        match taken {
            Ok(mut conn) => {
                keeper.held();
                pause = Duration::from_millis(50);
                let released = tokio::select! {
                    _ = keeper.released() => true,
                    _ = broken(&mut conn) => false,
                };
                // Closing the session lets the lock go.
                let _ = conn.close().await;
                if released {
                    return;
                }
                keeper.lost();
                tracing::warn!(
                    worker,
                    "lost the worker's liveness connection; taking it again"
                );
            }
            Err(e) => {
                tracing::debug!(worker, error = %e, "could not take the worker's liveness lock")
            }
        }
        tokio::select! {
            _ = keeper.released() => return,
            _ = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// A new connection holding `worker`'s lock, the worker listed as holding it.
async fn take(options: &PgConnectOptions, sql: &Sql, worker: &str) -> Result<PgConnection, Error> {
    let mut conn = PgConnection::connect_with(options).await.map_err(db)?;
    let locked: bool = sqlx::query_scalar(&sql.liveness_hold)
        .bind(worker)
        .fetch_one(&mut conn)
        .await
        .map_err(db)?;
    if !locked {
        return Err(Error::backend(format!(
            "another session holds the liveness lock of worker `{worker}`"
        )));
    }
    sqlx::query(&sql.liveness_register)
        .bind(worker)
        .execute(&mut conn)
        .await
        .map_err(db)?;
    Ok(conn)
}

/// Resolves when `conn` stops answering.
async fn broken(conn: &mut PgConnection) {
    loop {
        tokio::time::sleep(CHECK_EVERY).await;
        if conn.ping().await.is_err() {
            return;
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
