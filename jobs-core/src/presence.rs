//! What workers record in the store about themselves, so that programs which do not link the
//! application's job types (the CLI, the dashboard) can show them: live worker processes and
//! the cron schedules they run.

use serde::{Deserialize, Serialize};

use crate::model::Timestamp;

/// A live worker process, as its heartbeats record it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerInfo {
    /// The worker's id (also the `worker` of its leases).
    pub id: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// The queues it takes jobs from.
    pub queues: Vec<String>,
    /// How many jobs it runs at once.
    pub concurrency: usize,
    /// The stored names of the job types it can run.
    pub names: Vec<String>,
    /// When it started.
    pub started_at: Timestamp,
    /// Its latest heartbeat.
    pub last_seen: Timestamp,
}

/// A periodic job's schedule, as the workers that run it record it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleInfo {
    /// The schedule's name: the job's stored name.
    pub name: String,
    /// The queue its ticks are enqueued in.
    pub queue: String,
    /// The cron expression.
    pub expression: String,
    /// The IANA time zone it is read in (`"UTC"` when the job names none).
    pub timezone: String,
}

/// A schedule with what the store knows of its ticks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSchedule {
    /// The schedule.
    pub schedule: ScheduleInfo,
    /// The latest tick stored, if any ran yet.
    pub last_tick: Option<Timestamp>,
    /// When a worker last recorded it.
    pub seen_at: Timestamp,
}
