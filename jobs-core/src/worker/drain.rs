//! `Worker::drain`, for tests: run a worker until its queues have nothing ready, then stop.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::backend::{Backend, ListParams};
use crate::filter::JobFilter;
use crate::job::Job;
use crate::memory::MemoryBackend;
use crate::model::JobStatus;
use crate::Error;

use super::config::Worker;
use super::start::plan;
use crate::event::JobEvent;

/// How often a draining worker's queues are checked for work left.
const CHECK_EVERY: Duration = Duration::from_millis(5);

/// What a [`Worker::drain`] ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drained {
    /// Attempts that completed.
    pub completed: u64,
    /// Attempts that failed and will be retried later (after the drain).
    pub retrying: u64,
    /// Jobs that ended dead.
    pub dead: u64,
}

impl Worker {
    /// Runs this worker until no job of its queues is ready or running, then stops it
    /// gracefully: a test's way to run everything a request enqueued, inline. Jobs waiting for
    /// a retry or a later `run_at` are left waiting (see [`Drained::retrying`]).
    pub async fn drain(self) -> Result<Drained, Error> {
        let counters: Arc<[AtomicU64; 3]> = Arc::default();
        let count = |i: usize| {
            let counters = counters.clone();
            move |_: &JobEvent| {
                counters[i].fetch_add(1, Ordering::Relaxed);
            }
        };
        let queues = plan(&self)?.queues;
        let backend = self.backend.clone();
        let clock = self.clock.clone();
        let worker = self
            .on_completed(count(0))
            .on_failed(count(1))
            .on_dead(count(2));
        // Twice in a row: a job moving between statuses while one check reads them could be
        // missed by it.
        let idle = async move {
            let mut empty_checks = 0;
            while empty_checks < 2 {
                tokio::time::sleep(CHECK_EVERY).await;
                if nothing_left(&backend, &queues, clock.now()).await {
                    empty_checks += 1;
                } else {
                    empty_checks = 0;
                }
            }
        };
        worker.run_until(idle).await?;
        let [completed, failed, dead] = counters.as_ref();
        let dead = dead.load(Ordering::Relaxed);
        Ok(Drained {
            completed: completed.load(Ordering::Relaxed),
            retrying: failed.load(Ordering::Relaxed) - dead,
            dead,
        })
    }
}

/// Whether none of `queues` has a job running or ready by `now`.
async fn nothing_left<B: Backend + ?Sized>(
    backend: &B,
    queues: &[String],
    now: crate::Timestamp,
) -> bool {
    for queue in queues {
        // Running last: a job leased between the reads is then seen running.
        for status in [JobStatus::Scheduled, JobStatus::Pending, JobStatus::Running] {
            let params = ListParams {
                filter: JobFilter::new().queue(queue.clone()).status(status),
                after: None,
                limit: 10_000,
            };
            match backend.list(params).await {
                Ok(jobs)
                    if jobs
                        .iter()
                        .any(|j| status == JobStatus::Running || j.run_at <= now) =>
                {
                    return false
                }
                Ok(_) => {}
                Err(_) => return false,
            }
        }
    }
    true
}

impl MemoryBackend {
    /// The payloads of the jobs of type `J` that wait to run (pending or scheduled), oldest
    /// first: what a test asserts was enqueued.
    pub fn enqueued<J: Job>(&self) -> Vec<J> {
        self.waiting_payloads(J::NAME)
            .into_iter()
            .map(|payload| {
                serde_json::from_str(payload.get())
                    .unwrap_or_else(|e| panic!("a stored `{}` does not deserialize: {e}", J::NAME))
            })
            .collect()
    }
}
