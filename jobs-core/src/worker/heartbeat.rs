//! The worker's presence in the store, for programs that do not link the application's job
//! types (the CLI, the dashboard): a heartbeat at start and then every interval saying what the
//! worker is (host, pid, queues, concurrency, the job names it can run), the cron schedules it
//! runs, and its removal when it stops gracefully.
//!
//! A failed write is only a warning: the worker's jobs do not depend on it.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{interval_at, Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, DeregisterParams, HeartbeatParams, SaveSchedulesParams};
use crate::clock;
use crate::model::Timestamp;
use crate::presence::{ScheduleInfo, WorkerInfo};

use super::config::Worker;
use super::shared::Shared;
use super::start::Plan;

/// How often the schedules are recorded again, so that their `seen_at` stays recent.
const SCHEDULES_EVERY: Duration = Duration::from_secs(60);

/// A heartbeat lasts this many intervals: a worker is listed until it misses three in a row.
const BEATS_PER_LIFE: u32 = 3;

/// What the worker records about itself.
pub(crate) struct Presence {
    worker: WorkerInfo,
    schedules: Vec<ScheduleInfo>,
    every: Duration,
}

impl Presence {
    /// The presence of `worker`, started at `now` to run `plan`. Its schedules are recorded only
    /// when it enqueues their ticks.
    pub(super) fn of(worker: &Worker, plan: &Plan, now: Timestamp) -> Self {
        let mut names: Vec<String> = plan.types.keys().cloned().collect();
        names.sort_unstable();
        let schedules = if worker.cron {
            plan.periodic.iter().map(|p| p.info()).collect()
        } else {
            Vec::new()
        };
        Presence {
            worker: WorkerInfo {
                id: worker.id.clone(),
                host: host_name(),
                pid: std::process::id(),
                queues: plan.queues.clone(),
                concurrency: worker.concurrency,
                names,
                started_at: now,
                last_seen: now,
            },
            schedules,
            every: worker.heartbeat_interval,
        }
    }

    /// Records the worker and its schedules.
    pub(super) async fn announce(&mut self, shared: &Shared) {
        self.beat(shared).await;
        self.save_schedules(shared).await;
    }

    /// Beats every interval and records the schedules again every minute until `stop`, then
    /// removes the worker from the store.
    pub(super) async fn keep(mut self, shared: Arc<Shared>, stop: CancellationToken) {
        let mut beats = interval_at(Instant::now() + self.every, self.every);
        let mut refresh = interval_at(Instant::now() + SCHEDULES_EVERY, SCHEDULES_EVERY);
        for timer in [&mut beats, &mut refresh] {
            timer.set_missed_tick_behavior(MissedTickBehavior::Delay);
        }
        loop {
            tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                _ = beats.tick() => self.beat(&shared).await,
                _ = refresh.tick() => self.save_schedules(&shared).await,
            }
        }
        let params = DeregisterParams {
            worker: self.worker.id.clone(),
        };
        if let Err(e) = shared.backend.deregister(params).await {
            tracing::warn!(error = %e, "could not remove the worker from the store; it stays listed until its heartbeat lapses");
        }
    }

    async fn beat(&mut self, shared: &Shared) {
        let now = shared.clock.now();
        self.worker.last_seen = now;
        let params = HeartbeatParams {
            worker: self.worker.clone(),
            expires_at: clock::later(now, self.every * BEATS_PER_LIFE),
            now,
        };
        match shared.backend.heartbeat(params).await {
            // The store forgets the places of a worker whose heartbeat expired: tell them again.
            Ok(()) => shared.tell_places(true).await,
            Err(e) => tracing::warn!(error = %e, "could not record the worker's heartbeat"),
        }
    }

    async fn save_schedules(&self, shared: &Shared) {
        if self.schedules.is_empty() {
            return;
        }
        let params = SaveSchedulesParams {
            schedules: self.schedules.clone(),
            now: shared.clock.now(),
        };
        if let Err(e) = shared.backend.save_schedules(params).await {
            tracing::warn!(error = %e, "could not record the worker's cron schedules");
        }
    }
}

/// The name of the host this process runs on: `$HOSTNAME`, else the kernel's (Linux), else
/// `"unknown"`.
fn host_name() -> String {
    let named = |name: String| Some(name.trim().to_string()).filter(|n| !n.is_empty());
    std::env::var("HOSTNAME")
        .ok()
        .and_then(named)
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .and_then(named)
        })
        .unwrap_or_else(|| "unknown".to_string())
}
