//! Reading jobs back: one by id, a page of a list, a queue's counts.

use jobs_core::{CountsParams, Error, JobId, JobRecord, JobStatus, ListParams, QueueCounts};
use sqlx::{PgExecutor, Row};

use crate::error::db;
use crate::record::record;
use crate::sql::Sql;

/// One job by id.
pub(crate) async fn job<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    id: JobId,
) -> Result<Option<JobRecord>, Error> {
    let row = sqlx::query(&sql.job)
        .bind(id.0)
        .fetch_optional(exec)
        .await
        .map_err(db)?;
    row.as_ref().map(record).transpose()
}

/// A page of jobs, oldest first.
pub(crate) async fn list<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: ListParams,
) -> Result<Vec<JobRecord>, Error> {
    let rows = sqlx::query(&sql.list)
        .bind(p.queue)
        .bind(p.status.map(JobStatus::as_str))
        .bind(p.after.map(|id| id.0))
        .bind(i64::try_from(p.limit).unwrap_or(i64::MAX))
        .fetch_all(exec)
        .await
        .map_err(db)?;
    rows.iter().map(record).collect()
}

/// A queue's jobs by status.
pub(crate) async fn counts<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: CountsParams,
) -> Result<QueueCounts, Error> {
    let rows = sqlx::query(&sql.counts)
        .bind(p.queue)
        .fetch_all(exec)
        .await
        .map_err(db)?;
    let mut counts = QueueCounts::default();
    for row in rows {
        let status: String = row.try_get("status").map_err(db)?;
        let n: i64 = row.try_get("n").map_err(db)?;
        *counts.get_mut(status.parse()?) = u64::try_from(n).unwrap_or(0);
    }
    Ok(counts)
}
