//! What workers record about themselves: heartbeats of live workers and the cron schedules they
//! run, for programs that do not link the application's job types (the CLI, the dashboard).

use std::collections::BTreeMap;

use jobs_core::{
    DeregisterParams, Error, HeartbeatParams, SaveSchedulesParams, ScheduleInfo, StoredSchedule,
    WorkerInfo, WorkersParams,
};
use sqlx::postgres::PgRow;
use sqlx::{PgExecutor, Row};

use crate::error::db;
use crate::sql::Sql;

/// Upserts the worker's row with `last_seen = now`, and forgets workers whose heartbeat expired.
pub(crate) async fn heartbeat<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: HeartbeatParams,
) -> Result<(), Error> {
    let w = p.worker;
    sqlx::query(&sql.heartbeat)
        .bind(&w.id)
        .bind(&w.host)
        .bind(i64::from(w.pid))
        .bind(&w.queues)
        .bind(i64::try_from(w.concurrency).unwrap_or(i64::MAX))
        .bind(&w.names)
        .bind(w.started_at)
        .bind(p.now)
        .bind(p.expires_at)
        .execute(exec)
        .await
        .map_err(db)?;
    Ok(())
}

/// Forgets a worker.
pub(crate) async fn deregister<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: DeregisterParams,
) -> Result<(), Error> {
    sqlx::query(&sql.deregister)
        .bind(p.worker)
        .execute(exec)
        .await
        .map_err(db)?;
    Ok(())
}

/// The workers whose heartbeat has not expired, by id.
pub(crate) async fn live_workers<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: WorkersParams,
) -> Result<Vec<WorkerInfo>, Error> {
    let rows = sqlx::query(&sql.live_workers)
        .bind(p.now)
        .fetch_all(exec)
        .await
        .map_err(db)?;
    rows.iter().map(worker).collect()
}

fn worker(row: &PgRow) -> Result<WorkerInfo, Error> {
    let pid: i64 = row.try_get("pid").map_err(db)?;
    let concurrency: i64 = row.try_get("concurrency").map_err(db)?;
    Ok(WorkerInfo {
        id: row.try_get("id").map_err(db)?,
        host: row.try_get("host").map_err(db)?,
        pid: u32::try_from(pid).unwrap_or(0),
        queues: row.try_get("queues").map_err(db)?,
        concurrency: usize::try_from(concurrency).unwrap_or(0),
        names: row.try_get("names").map_err(db)?,
        started_at: row.try_get("started_at").map_err(db)?,
        last_seen: row.try_get("last_seen").map_err(db)?,
    })
}

/// Upserts the schedules by name, seen at `now`; of two with one name, the later is kept.
pub(crate) async fn save_schedules<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: SaveSchedulesParams,
) -> Result<(), Error> {
    // Each name once (an upsert cannot change a row twice), in name order (so that workers
    // saving the same schedules lock their rows in one order).
    let by_name: BTreeMap<&str, &ScheduleInfo> =
        p.schedules.iter().map(|s| (s.name.as_str(), s)).collect();
    if by_name.is_empty() {
        return Ok(());
    }
    let column = |field: fn(&ScheduleInfo) -> &str| -> Vec<&str> {
        by_name.values().map(|s| field(s)).collect()
    };
    sqlx::query(&sql.save_schedules)
        .bind(column(|s| &s.name))
        .bind(column(|s| &s.queue))
        .bind(column(|s| &s.expression))
        .bind(column(|s| &s.timezone))
        .bind(p.now)
        .execute(exec)
        .await
        .map_err(db)?;
    Ok(())
}

/// The recorded schedules by name, each with its last stored tick.
pub(crate) async fn stored_schedules<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
) -> Result<Vec<StoredSchedule>, Error> {
    let rows = sqlx::query(&sql.stored_schedules)
        .fetch_all(exec)
        .await
        .map_err(db)?;
    rows.iter()
        .map(|row| {
            Ok(StoredSchedule {
                schedule: ScheduleInfo {
                    name: row.try_get("name").map_err(db)?,
                    queue: row.try_get("queue").map_err(db)?,
                    expression: row.try_get("expression").map_err(db)?,
                    timezone: row.try_get("timezone").map_err(db)?,
                },
                last_tick: row.try_get("last_tick").map_err(db)?,
                seen_at: row.try_get("seen_at").map_err(db)?,
            })
        })
        .collect()
}
