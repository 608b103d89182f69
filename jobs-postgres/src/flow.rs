//! Stored flow limits: each queue's [`QueueLimits`] and whether it is keyed, in the
//! `queue_flow` table, so they hold for every worker process and across restarts.

use std::time::Duration;

use jobs_core::{Error, QueueFlow, QueueLimits, Rate, SetLimitsParams};
use sqlx::postgres::PgRow;
use sqlx::{PgExecutor, Row};

use crate::error::db;
use crate::record::{int4, millis};
use crate::sql::Sql;

/// Stores a queue's limits, replacing any; all `None` removes them.
pub(crate) async fn set_limits<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: SetLimitsParams,
) -> Result<(), Error> {
    p.limits.validate()?;
    let limits = p.limits;
    sqlx::query(&sql.set_limits)
        .bind(p.queue)
        .bind(limits.concurrency.map(int4))
        .bind(limits.rate.map(|r| int4(r.limit)))
        .bind(limits.rate.map(|r| millis(r.period)))
        .bind(
            limits
                .max_depth
                .map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
        )
        .execute(exec)
        .await
        .map_err(db)?;
    Ok(())
}

/// Every queue with limits or keyed jobs, sorted by queue.
pub(crate) async fn flow<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
) -> Result<Vec<QueueFlow>, Error> {
    let rows = sqlx::query(&sql.flow).fetch_all(exec).await.map_err(db)?;
    rows.iter().map(queue_flow).collect()
}

/// One `queue_flow` row.
fn queue_flow(row: &PgRow) -> Result<QueueFlow, Error> {
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    let concurrency: Option<i32> = row.try_get("concurrency").map_err(db)?;
    let rate_limit: Option<i32> = row.try_get("rate_limit").map_err(db)?;
    let rate_period_ms: Option<i64> = row.try_get("rate_period_ms").map_err(db)?;
    let max_depth: Option<i64> = row.try_get("max_depth").map_err(db)?;
    let rate = rate_limit.zip(rate_period_ms).map(|(limit, ms)| {
        Rate::new(
            u32::try_from(limit).unwrap_or(1),
            Duration::from_millis(count(ms)),
        )
    });
    Ok(QueueFlow {
        queue: row.try_get("queue").map_err(db)?,
        limits: QueueLimits {
            concurrency: concurrency.map(|n| u32::try_from(n).unwrap_or(1)),
            rate,
            max_depth: max_depth.map(count),
        },
        keyed: row.try_get("keyed").map_err(db)?,
    })
}
