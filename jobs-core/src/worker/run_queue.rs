//! The run queue: leased jobs wait here for one of the worker's `concurrency` runners, which
//! take them in the job model's order (priority, then run_at, then FIFO) however the fetches
//! that leased them happened to come back.
//!
//! A runner is a task that runs one job after another, so starting a job costs neither a task
//! nor a signal of its own: the queue holds each job's context, and counts the queued jobs in a
//! semaphore that idle runners wait on.
//!
//! The queue is a sorted deque, not a B-tree: it holds at most a few fetches' jobs, and a fetch
//! comes back in run order, after what is queued, so its jobs join with a push at the back and
//! leave from the front, where a tree compared each key with a node's keys on every level.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::context::{BackendContext as _, JobContext};
use crate::order::RunOrder;

/// The jobs waiting for a runner, and how many runners have one.
pub(crate) struct RunQueue {
    state: Mutex<State>,
    /// One permit per queued job; closed when the worker stops.
    queued: Semaphore,
    runners: usize,
}

struct State {
    /// Sorted by run order; one job per key (a job's attempts share it).
    waiting: VecDeque<(RunOrder, Queued)>,
    /// Runners with a job, from taking it until it hands its place back.
    busy: usize,
    /// The worker stops: nothing queued from now on runs.
    closed: bool,
}

/// A leased job waiting for its turn, with the window slot it holds (none for a delivered job
/// that found none free).
pub(crate) struct Queued {
    pub ctx: JobContext,
    pub slot: Option<OwnedSemaphorePermit>,
}

/// A runner's place, taken with a job: it frees when dropped.
pub(crate) struct Place<'q> {
    queue: &'q RunQueue,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.queue.state().busy -= 1;
    }
}

impl RunQueue {
    /// A queue for `runners` runners.
    pub(super) fn new(runners: usize) -> Arc<Self> {
        Arc::new(RunQueue {
            state: Mutex::new(State {
                waiting: VecDeque::new(),
                busy: 0,
                closed: false,
            }),
            queued: Semaphore::new(0),
            runners,
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `jobs`, the whole batch before any runner takes one, so the batch's own order
    /// does not matter. Returns the jobs refused, to be handed back unstarted: all of them once
    /// the queue is closed, and an earlier attempt of a job queued again (its lease lapsed and
    /// this worker leased it anew).
    pub(super) fn admit(&self, jobs: impl IntoIterator<Item = Queued>) -> Vec<Queued> {
        let mut refused = Vec::new();
        let mut state = self.state();
        if state.closed {
            refused.extend(jobs);
            return refused;
        }
        let mut added = 0;
        for job in jobs {
            let key = RunOrder::of(job.ctx.record());
            let place = match state.waiting.back() {
                Some((last, _)) if *last >= key => state
                    .waiting
                    .binary_search_by(|(queued, _)| queued.cmp(&key)),
                _ => Err(state.waiting.len()),
            };
            match place {
                Err(at) => {
                    state.waiting.insert(at, (key, job));
                    added += 1;
                }
                // The later attempt stopped the earlier one (see `Leases::insert`), which may
                // come second (a reserved job queued once handed a place).
                Ok(at) if state.waiting[at].1.ctx.is_cancelled() => {
                    refused.push(std::mem::replace(&mut state.waiting[at].1, job))
                }
                Ok(at) => {
                    debug_assert!(
                        state.waiting[at].1.ctx.lease() != job.ctx.lease(),
                        "queued twice"
                    );
                    refused.push(job)
                }
            }
        }
        drop(state);
        self.queued.add_permits(added);
        refused
    }

    /// The next job to run, and the place it holds; `None` once the queue is closed.
    pub(super) async fn next(&self) -> Option<(Queued, Place<'_>)> {
        loop {
            self.queued.acquire().await.ok()?.forget();
            let mut state = self.state();
            if state.closed {
                return None;
            }
            if let Some((_, job)) = state.waiting.pop_front() {
                state.busy += 1;
                return Some((job, Place { queue: self }));
            }
        }
    }

    /// Closes the queue: runners take no job from now on. Returns the jobs that waited, to be
    /// handed back unstarted.
    pub(super) fn close(&self) -> Vec<Queued> {
        let mut state = self.state();
        state.closed = true;
        self.queued.close();
        let waited = std::mem::take(&mut state.waiting);
        waited.into_iter().map(|(_, job)| job).collect()
    }

    /// How many runners take jobs from the queue.
    pub(super) fn runners(&self) -> usize {
        self.runners
    }

    /// How many jobs wait for a runner, and whether a runner is idle (no job to run). The jobs
    /// that idle runners are about to take (just admitted, or between two jobs) do not wait.
    pub(super) fn backlog(&self) -> (usize, bool) {
        let state = self.state();
        let idle = self.runners - state.busy;
        (
            state.waiting.len().saturating_sub(idle),
            state.waiting.len() < idle,
        )
    }

    /// How many more jobs could start at once: the idle runners that no queued job is about
    /// to take.
    pub(super) fn open_places(&self) -> usize {
        let state = self.state();
        (self.runners - state.busy).saturating_sub(state.waiting.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::record;

    #[tokio::test]
    async fn runners_take_jobs_by_priority_not_arrival() {
        let queue = RunQueue::new(1);
        let (low, high) = (queued(record(10)), queued(record(0)));
        let (low_id, high_id) = (low.ctx.record().id, high.ctx.record().id);
        assert!(queue.admit([low, high]).is_empty());
        assert_eq!(
            queue.backlog(),
            (1, false),
            "the idle runner is about to take one"
        );
        let (first, place) = queue.next().await.unwrap();
        assert_eq!(first.ctx.record().id, high_id, "the urgent job runs first");
        assert_eq!(queue.backlog(), (1, false), "its runner is busy");
        assert_eq!(queue.open_places(), 0);
        drop(place);
        let (second, _place) = queue.next().await.unwrap();
        assert_eq!(second.ctx.record().id, low_id, "then the routine one");
        assert_eq!(queue.backlog(), (0, false));
    }

    #[tokio::test]
    async fn jobs_run_in_order_however_the_batches_interleave() {
        let queue = RunQueue::new(1);
        let batches = [[5, 1, 3], [2, 9, 0], [4, 9, 6]].map(|b| b.map(|p| queued(record(p))));
        let mut ids: Vec<(i16, crate::JobId)> = Vec::new();
        for batch in batches {
            ids.extend(
                batch
                    .iter()
                    .map(|q| (q.ctx.record().priority, q.ctx.record().id)),
            );
            assert!(queue.admit(batch).is_empty());
        }
        // Priority first, then run_at: of the two 9s, the first made is due first.
        ids.sort();
        for (_, id) in ids {
            let (job, _place) = queue.next().await.unwrap();
            assert_eq!(job.ctx.record().id, id);
        }
        assert_eq!(queue.backlog(), (0, true));
    }

    #[tokio::test]
    async fn idle_runners_are_open_places() {
        let queue = RunQueue::new(3);
        assert_eq!((queue.open_places(), queue.backlog()), (3, (0, true)));
        queue.admit([queued(record(1))]);
        assert_eq!(queue.open_places(), 2, "a runner is about to take it");
        assert_eq!(queue.backlog(), (0, true), "two others stay idle");
        let (_, _place) = queue.next().await.unwrap();
        assert_eq!((queue.open_places(), queue.backlog()), (2, (0, true)));
    }

    #[tokio::test]
    async fn a_closed_queue_gives_back_what_waited_and_refuses_more() {
        let queue = RunQueue::new(2);
        queue.admit([queued(record(1)), queued(record(2))]);
        let waited = queue.close();
        assert_eq!(waited.len(), 2);
        assert!(queue.next().await.is_none(), "runners stop");
        assert_eq!(queue.admit([queued(record(3))]).len(), 1, "refused");
    }

    #[tokio::test]
    async fn a_job_queued_again_keeps_its_later_attempt_whichever_comes_first() {
        for later_first in [false, true] {
            let queue = RunQueue::new(1);
            let job = record(1);
            let (earlier, later) = (queued(job.clone()), queued(job));
            let (earlier_lease, later_lease) = (earlier.ctx.lease(), later.ctx.lease());
            // As `Leases::insert` does when the later attempt is leased.
            earlier.ctx.cancel();
            let (first, second) = if later_first {
                (later, earlier)
            } else {
                (earlier, later)
            };
            assert!(queue.admit([first]).is_empty());
            let refused = queue.admit([second]);
            assert_eq!(refused.len(), 1);
            assert_eq!(
                refused[0].ctx.lease(),
                earlier_lease,
                "the earlier is handed back"
            );
            let (run, _place) = queue.next().await.unwrap();
            assert_eq!(run.ctx.lease(), later_lease, "the later runs");
            assert_eq!(queue.queued.available_permits(), 0, "one permit per job");
        }
    }

    fn queued(record: crate::model::JobRecord) -> Queued {
        let backend = crate::AnyBackend::new(crate::MemoryBackend::new());
        Queued {
            ctx: JobContext::of(
                backend,
                crate::model::LeasedJob {
                    record,
                    token: crate::LeaseToken::new(),
                    reserved: false,
                },
            ),
            slot: None,
        }
    }
}
