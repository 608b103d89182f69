//! Retrying, cancelling and deleting jobs by id or by filter: one statement per batch, which
//! selects the jobs in id order (`FOR UPDATE`), applies the action and answers what it changed,
//! which retries a held unique key refused, and where the next batch starts.

use jobs_core::{Action, Error, HeldKey, JobId, ManageParams, Managed, Target};
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Row};
use uuid::Uuid;

use crate::error::{db, is_unique_key_violation, RACE_ROUNDS};
use crate::select::Selection;
use crate::sql::Sql;

/// Applies `p.action` to the jobs `p.target` names.
pub(crate) async fn manage(sql: &Sql, pool: &PgPool, p: ManageParams) -> Result<Managed, Error> {
    let (selection, limit) = match &p.target {
        Target::Ids(ids) if ids.is_empty() => return Ok(Managed::default()),
        Target::Ids(ids) => (Selection::ids(ids), None),
        Target::Matching { .. } if p.limit == 0 => return Ok(Managed::default()),
        Target::Matching { filter, after } => (
            Selection::matching(filter, *after),
            Some(i64::try_from(p.limit).unwrap_or(i64::MAX)),
        ),
    };
    // Each statement's own parameters come before the selection's: $1 the limit, then `now`
    // and the channel, as far as it takes them.
    let (statement, own) = match p.action {
        Action::Retry => (&sql.retry, 3),
        Action::Cancel => (&sql.cancel, 2),
        Action::Delete => (&sql.delete, 1),
    };
    let statement = selection.splice(statement, own + 1);
    let mut round = 0;
    let row = loop {
        round += 1;
        let query = sqlx::query(&statement).bind(limit);
        let query = match p.action {
            Action::Retry => query.bind(p.now).bind(sql.channel()),
            Action::Cancel => query.bind(p.now),
            Action::Delete => query,
        };
        match selection.bind(query).fetch_one(pool).await {
            Err(e) if round < RACE_ROUNDS && is_unique_key_violation(&e) => continue,
            done => break done.map_err(db)?,
        }
    };
    managed(&row, limit)
}

/// The statement's answer. `limit`: the batch size when the target was a filter, so that the
/// last examined id is the next batch's cursor once a full batch was examined.
fn managed(row: &PgRow, limit: Option<i64>) -> Result<Managed, Error> {
    let ids = |column: &str| -> Result<Vec<JobId>, Error> {
        let ids: Vec<Uuid> = row.try_get(column).map_err(db)?;
        Ok(ids.into_iter().map(JobId).collect())
    };
    let keys: Vec<String> = row.try_get("held_keys").map_err(db)?;
    let held = ids("held")?
        .into_iter()
        .zip(keys)
        .zip(ids("holders")?)
        .map(|((job, key), holder)| HeldKey { job, key, holder })
        .collect();
    let examined: i64 = row.try_get("examined").map_err(db)?;
    let last: Option<Uuid> = row.try_get("last").map_err(db)?;
    Ok(Managed {
        changed: ids("changed")?,
        held,
        last: last
            .filter(|_| limit.is_some_and(|limit| examined >= limit))
            .map(JobId),
    })
}
