//! Leasing ready jobs: one statement per batch.

use jobs_core::{later, Error, FetchParams, LeasedJob};
use sqlx::PgPool;

use crate::error::db;
use crate::record::leased;
use crate::sql::Sql;

/// Leases up to `p.limit` ready jobs of `p.queues`, in run order.
pub(crate) async fn fetch(
    sql: &Sql,
    pool: &PgPool,
    p: FetchParams,
) -> Result<Vec<LeasedJob>, Error> {
    if p.limit == 0 || p.queues.is_empty() {
        return Ok(Vec::new());
    }
    let mut queues = p.queues;
    queues.sort_unstable();
    queues.dedup();
    let query = match <[String; 1]>::try_from(queues) {
        Ok([queue]) => sqlx::query(&sql.fetch_one).bind(queue),
        Err(queues) => sqlx::query(&sql.fetch).bind(queues),
    };
    let rows = query
        .bind(p.now)
        .bind(i64::try_from(p.limit).unwrap_or(i64::MAX))
        .bind(p.worker)
        .bind(later(p.now, p.lease_for))
        .fetch_all(pool)
        .await
        .map_err(db)?;
    let mut jobs = rows.iter().map(leased).collect::<Result<Vec<_>, _>>()?;
    jobs.sort_unstable_by_key(|j| (j.record.priority, j.record.run_at, j.record.id));
    Ok(jobs)
}
