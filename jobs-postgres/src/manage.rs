//! Managing single jobs by hand: retry a dead or cancelled job, delete, cancel.

use jobs_core::{CancelParams, DeleteParams, Error, RetryParams};
use sqlx::{PgExecutor, Row};
use uuid::Uuid;

use crate::error::{db, is_unique_key_violation};
use crate::sql::Sql;

/// Puts a dead or cancelled job back to pending with fresh attempts; refuses (with
/// [`Error::Invalid`]) while another active job holds its unique key.
pub(crate) async fn retry<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: RetryParams,
) -> Result<bool, Error> {
    let row = sqlx::query(&sql.retry)
        .bind(p.id.0)
        .bind(p.now)
        .bind(sql.channel())
        .fetch_one(exec)
        .await
        .map_err(|e| {
            if is_unique_key_violation(&e) {
                Error::Invalid(format!(
                    "cannot retry job {}: its unique key is held by an active job",
                    p.id
                ))
            } else {
                db(e)
            }
        })?;
    let holder: Option<Uuid> = row.try_get("holder").map_err(db)?;
    if let Some(holder) = holder {
        let key: Option<String> = row.try_get("unique_key").map_err(db)?;
        return Err(Error::Invalid(format!(
            "cannot retry job {}: its unique key `{}` is held by active job {holder}",
            p.id,
            key.unwrap_or_default()
        )));
    }
    row.try_get("retried").map_err(db)
}

/// Deletes a job; false if it did not exist.
pub(crate) async fn delete<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: DeleteParams,
) -> Result<bool, Error> {
    let done = sqlx::query(&sql.delete)
        .bind(p.id.0)
        .execute(exec)
        .await
        .map_err(db)?;
    Ok(done.rows_affected() == 1)
}

/// Cancels an active job; false if it had finished or does not exist.
pub(crate) async fn cancel<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: CancelParams,
) -> Result<bool, Error> {
    let done = sqlx::query(&sql.cancel)
        .bind(p.id.0)
        .bind(p.now)
        .execute(exec)
        .await
        .map_err(db)?;
    Ok(done.rows_affected() == 1)
}
