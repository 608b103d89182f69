//! Upkeep the worker runs on timers: rescue of lapsed leases and retention pruning.

use jobs_core::{Error, JobId, PruneParams, RescueParams, RescueTarget};
use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

use crate::error::db;
use crate::record::report;
use crate::sql::Sql;

/// Rescues the running jobs `p.target` names, recording `p.error` as the attempt's: pending
/// again (keeping their place in the queue), or dead when out of attempts. Gone workers' offers
/// are withdrawn first (see `sql/forget_offers.sql`).
pub(crate) async fn rescue(sql: &Sql, pool: &PgPool, p: RescueParams) -> Result<Vec<JobId>, Error> {
    if p.limit == 0 {
        return Ok(Vec::new());
    }
    let workers = match &p.target {
        RescueTarget::Lapsed => None,
        RescueTarget::Workers(workers) => Some(workers),
    };
    if let Some(workers) = workers {
        sqlx::query(&sql.forget_offers)
            .bind(workers)
            .bind(None::<&str>)
            .execute(pool)
            .await
            .map_err(db)?;
    }
    let ids: Vec<Uuid> = sqlx::query_scalar(&sql.rescue)
        .bind(p.now)
        .bind(i64::try_from(p.limit).unwrap_or(i64::MAX))
        .bind(report(&p.error)?)
        .bind(sql.channel())
        .bind(workers)
        .fetch_all(pool)
        .await
        .map_err(db)?;
    Ok(ids.into_iter().map(JobId).collect())
}

/// Removes finished jobs beyond the retention policy, oldest first, and folds the queue's
/// `finished_counts` rows into one per status and its `finished_minutes` rows into one per
/// minute of the last 25 hours (see `sql/prune.sql`), so those tables stay at about one row per
/// queue and status, and per queue and minute, plus one per write since the last prune.
pub(crate) async fn prune<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: PruneParams,
) -> Result<u64, Error> {
    // Without limits it removes nothing, but still folds the queue's finished counts.
    if p.limit == 0 {
        return Ok(0);
    }
    let pruned: i64 = sqlx::query_scalar(&sql.prune)
        .bind(&p.queue)
        .bind(p.keep_count.map(|n| i64::try_from(n).unwrap_or(i64::MAX)))
        .bind(p.finished_before)
        .bind(i64::try_from(p.limit).unwrap_or(i64::MAX))
        .bind(p.now)
        .fetch_one(exec)
        .await
        .map_err(db)?;
    Ok(u64::try_from(pruned).unwrap_or(0))
}
