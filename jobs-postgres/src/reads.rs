//! Reading jobs back: one by id, a page of the jobs matching a filter, a queue's counts, the
//! queues' names.

use jobs_core::{CountsParams, Error, JobId, JobRecord, ListParams, QueueCounts};
use sqlx::{PgExecutor, Row};

use crate::error::db;
use crate::record::record;
use crate::select::Selection;
use crate::sql::Sql;

/// One job by id.
pub(crate) async fn read<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    id: JobId,
) -> Result<Option<JobRecord>, Error> {
    let row = sqlx::query(&sql.read)
        .bind(id.0)
        .fetch_optional(exec)
        .await
        .map_err(db)?;
    row.as_ref().map(record).transpose()
}

/// A page of the jobs matching the filter, in id order.
pub(crate) async fn list<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: ListParams,
) -> Result<Vec<JobRecord>, Error> {
    if p.limit == 0 {
        return Ok(Vec::new());
    }
    let selection = Selection::matching(&p.filter, p.after);
    let statement = selection.splice(&sql.list, 2);
    let query = sqlx::query(&statement).bind(i64::try_from(p.limit).unwrap_or(i64::MAX));
    let rows = selection.bind(query).fetch_all(exec).await.map_err(db)?;
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

/// Every queue that holds jobs or that jobs were deleted from, sorted.
pub(crate) async fn queue_names<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
) -> Result<Vec<String>, Error> {
    sqlx::query_scalar(&sql.queue_names)
        .fetch_all(exec)
        .await
        .map_err(db)
}
