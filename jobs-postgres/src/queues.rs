//! Paused queues, kept in the `paused_queues` table so that a pause holds across restarts and
//! for every worker process.

use jobs_core::{Error, PauseParams};
use sqlx::PgExecutor;

use crate::error::db;
use crate::sql::Sql;

/// Pauses or resumes a queue.
pub(crate) async fn pause<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: PauseParams,
) -> Result<(), Error> {
    sqlx::query(&sql.pause)
        .bind(p.queue)
        .bind(p.paused)
        .execute(exec)
        .await
        .map_err(db)?;
    Ok(())
}

/// The paused queues, sorted.
pub(crate) async fn paused_queues<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
) -> Result<Vec<String>, Error> {
    sqlx::query_scalar(&sql.paused_queues)
        .fetch_all(exec)
        .await
        .map_err(db)
}
