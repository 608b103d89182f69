//! What every task of a running worker shares, the times its retries become due, and the retry
//! loop of its backend writes.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::futures::Notified;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::any::AnyBackend;
use crate::clock::Clock;
use crate::fast_hash::HashMap;
use crate::model::Timestamp;
use crate::registry::JobType;
use crate::state::StateMap;

use super::events::Hooks;
use super::handoff::Handoffs;
use super::leases::Leases;
use super::metrics::WorkerMetrics;
use super::places::Places;

/// What every task of a running worker shares.
pub(crate) struct Shared {
    /// The worker's id.
    pub worker: String,
    /// The store.
    pub backend: AnyBackend,
    /// The job types this worker can run, by stored name.
    pub types: HashMap<String, JobType>,
    /// The values of handlers' `State<T>` parameters.
    pub state: StateMap,
    /// The time source.
    pub clock: Arc<dyn Clock>,
    /// The user's `on_completed`, `on_failed` and `on_dead` hooks.
    pub hooks: Hooks,
    /// The jobs this worker holds.
    pub leases: Leases,
    /// The reserved jobs waiting for a place under their queue's limit.
    pub handoffs: Handoffs,
    /// The places under limits that its promoted jobs hold, as the store last heard them.
    pub places: Places,
    /// Shutdown began: fetch nothing more, hand back jobs that have not started.
    pub stopping: CancellationToken,
    /// The grace period ran out: running jobs were told to stop, and are handed back (see
    /// [`Shared::stop_running`]).
    pub hard_stop: AtomicBool,
    /// When recorded retries become due.
    pub retries: Retries,
    /// The metric handles of its jobs (feature `metrics`).
    pub metrics: WorkerMetrics,
}

/// When the retries and snoozes this worker recorded become due, so that it fetches them on
/// time without polling.
#[derive(Default)]
pub(crate) struct Retries {
    due: Mutex<BinaryHeap<Reverse<Timestamp>>>,
    scheduled: Notify,
}

impl Retries {
    /// Remembers that a job becomes due at `at`, and wakes the idle fetch loop.
    pub(super) fn due_at(&self, at: Timestamp) {
        self.due
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Reverse(at));
        self.scheduled.notify_one();
    }

    /// Resolves when a retry is scheduled.
    pub(super) fn scheduled(&self) -> Notified<'_> {
        self.scheduled.notified()
    }

    /// How long an idle fetch loop may sleep at `now`: `poll`, or less if a retry is due sooner.
    pub(super) fn idle_for(&self, now: Timestamp, poll: Duration) -> Duration {
        let mut due = self.due.lock().unwrap_or_else(|e| e.into_inner());
        while due.peek().is_some_and(|Reverse(at)| *at <= now) {
            due.pop();
        }
        match due.peek() {
            Some(Reverse(at)) => (*at - now).to_std().unwrap_or_default().min(poll),
            None => poll,
        }
    }
}

impl Shared {
    /// The grace period ran out: tells every running job to stop, through its own context, so
    /// that no job waits on a signal shared by all of them.
    pub(super) fn stop_running(&self) {
        self.hard_stop.store(true, Ordering::Release);
        self.leases.stop_all();
    }

    /// Whether the grace period ran out (see [`Shared::stop_running`]).
    pub(super) fn stopped_hard(&self) -> bool {
        self.hard_stop.load(Ordering::Acquire)
    }

    /// Tells the store of the places its promoted jobs hold, where they changed (all of them
    /// when `again`): see [`Places::tell`].
    pub(super) async fn tell_places(&self, again: bool) {
        self.places
            .tell(&self.backend, &self.leases, &self.worker, again)
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        chrono::DateTime::from_timestamp_millis(ms).unwrap()
    }

    #[test]
    fn idle_until_the_next_retry_or_the_poll() {
        let retries = Retries::default();
        let poll = Duration::from_millis(500);
        assert_eq!(retries.idle_for(at(0), poll), poll, "nothing due: poll");
        retries.due_at(at(100));
        retries.due_at(at(2_000));
        assert_eq!(retries.idle_for(at(0), poll), Duration::from_millis(100));
        assert_eq!(
            retries.idle_for(at(1_900), poll),
            Duration::from_millis(100),
            "a past retry is forgotten"
        );
        assert_eq!(retries.idle_for(at(2_000), poll), poll);
    }
}
