//! What workers record about themselves, in keys of the prefix (hash tag `{prefix}`, one
//! cluster slot): live workers in the sorted set `{prefix}:workers` (scored by when each is
//! forgotten unless it beats again, the expired ones dropped by every heartbeat) beside the hash
//! `{prefix}:worker-info` of their descriptions; cron schedules in the hash
//! `{prefix}:schedules`, their last ticks read from each queue's `cron` hash.

use chrono::DateTime;
use futures_util::future::try_join_all;
use jobs_core::{
    DeregisterParams, Error, HeartbeatParams, SaveSchedulesParams, ScheduleInfo, StoredSchedule,
    WorkerInfo, WorkersParams,
};
use serde::{Deserialize, Serialize};

use crate::record::micros;
use crate::scripts::SCRIPTS;
use crate::RedisBackend;

/// A schedule as `{prefix}:schedules` holds it.
#[derive(Serialize, Deserialize)]
struct SavedSchedule {
    schedule: ScheduleInfo,
    /// When a worker last recorded it, in microseconds.
    seen_at: i64,
}

fn corrupt(what: &str, e: impl std::fmt::Display) -> Error {
    Error::backend(format!("stored {what} is corrupt: {e}"))
}

fn from_micros(us: i64) -> Result<jobs_core::Timestamp, Error> {
    DateTime::from_timestamp_micros(us).ok_or_else(|| corrupt("time", us))
}

impl RedisBackend {
    pub(crate) async fn record_heartbeat(&self, p: HeartbeatParams) -> Result<(), Error> {
        let mut worker = p.worker;
        worker.last_seen = p.now;
        let mut inv = self.global_invocation(&SCRIPTS.heartbeat, Some(p.now));
        inv.arg(&worker.id)
            .arg(micros(p.expires_at))
            .arg(serde_json::to_string(&worker)?);
        let forgotten: Vec<String> = self.run(&inv).await?;
        self.drop_places(&forgotten).await
    }

    /// Forgets a worker's places under the limits of every queue (each in its queue's slot),
    /// then the worker and its liveness: should the places fail, the worker can still be seen
    /// gone, and a rescue drops them.
    pub(crate) async fn forget_worker(&self, p: DeregisterParams) -> Result<(), Error> {
        self.drop_places(std::slice::from_ref(&p.worker)).await?;
        let mut inv = self.global_invocation(&SCRIPTS.deregister, None);
        inv.arg(&p.worker);
        self.run::<()>(&inv).await
    }

    pub(crate) async fn read_workers(&self, p: WorkersParams) -> Result<Vec<WorkerInfo>, Error> {
        let inv = self.global_invocation(&SCRIPTS.workers, Some(p.now));
        let described: Vec<Option<String>> = self.run(&inv).await?;
        let mut workers = described
            .into_iter()
            .flatten()
            .map(|json| serde_json::from_str(&json).map_err(|e| corrupt("worker", e)))
            .collect::<Result<Vec<WorkerInfo>, Error>>()?;
        workers.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        Ok(workers)
    }

    pub(crate) async fn record_schedules(&self, p: SaveSchedulesParams) -> Result<(), Error> {
        if p.schedules.is_empty() {
            return Ok(());
        }
        let mut cmd = redis::cmd("HSET");
        cmd.arg(self.inner().keys.schedules());
        for schedule in p.schedules {
            let name = schedule.name.clone();
            let saved = SavedSchedule {
                schedule,
                seen_at: micros(p.now),
            };
            cmd.arg(name).arg(serde_json::to_string(&saved)?);
        }
        self.query::<()>(&cmd).await
    }

    pub(crate) async fn read_schedules(&self) -> Result<Vec<StoredSchedule>, Error> {
        let keys = &self.inner().keys;
        let saved: Vec<(String, String)> = self
            .query(redis::cmd("HGETALL").arg(keys.schedules()))
            .await?;
        let mut saved = saved
            .into_iter()
            .map(|(_, json)| {
                serde_json::from_str::<SavedSchedule>(&json).map_err(|e| corrupt("schedule", e))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        saved.sort_unstable_by(|a, b| a.schedule.name.cmp(&b.schedule.name));
        // Each tick lives with its queue's keys, in the slot of that queue.
        let ticks = try_join_all(saved.iter().map(|s| async move {
            let mut cmd = redis::cmd("HGET");
            cmd.arg(keys.cron(&s.schedule.queue)).arg(&s.schedule.name);
            self.query::<Option<i64>>(&cmd).await
        }))
        .await?;
        saved
            .into_iter()
            .zip(ticks)
            .map(|(s, tick)| {
                Ok(StoredSchedule {
                    last_tick: tick.map(from_micros).transpose()?,
                    seen_at: from_micros(s.seen_at)?,
                    schedule: s.schedule,
                })
            })
            .collect()
    }
}
