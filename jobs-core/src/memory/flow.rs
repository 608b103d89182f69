//! The memory backend's flow control: stored limits, the sliding logs of starts, the keys
//! that throttled and debounced jobs hold, and the running jobs a fetch leaves out of its
//! counts.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::fast_hash::HashMap;
use crate::flow::{Coalesce, QueueLimits, Rate};
use crate::model::{JobId, JobRecord, Timestamp};

/// A queue (`key: None`) or a key within a queue whose starts are counted.
pub(super) type Scope = (String, Option<String>);

/// Flow state beside the jobs.
#[derive(Default)]
pub(super) struct Flow {
    /// Each limited queue's limits.
    pub(super) limits: BTreeMap<String, QueueLimits>,
    /// Queues into which jobs with key limits were enqueued.
    pub(super) keyed: BTreeSet<String>,
    /// The starts of each rate-limited scope.
    starts: HashMap<Scope, StartLog>,
    /// Per (queue, throttle key): the kept job and when its window ends.
    throttled: HashMap<(String, String), (JobId, Timestamp)>,
    /// Per (queue, debounce key): the job that took it last (it holds the key while waiting).
    debounced: HashMap<(String, String), JobId>,
}

impl Flow {
    /// How many more jobs of `scope` may start at `now` under `rate`.
    pub(super) fn rate_room(&mut self, scope: &Scope, rate: &Rate, now: Timestamp) -> usize {
        let started = self
            .starts
            .get_mut(scope)
            .map_or(0, |log| log.since(rate.window_start(now)));
        rate.room(started, usize::MAX)
    }

    /// Records `n` starts of `scope` at `now`.
    pub(super) fn started(&mut self, scope: Scope, n: u32, now: Timestamp) {
        self.starts.entry(scope).or_default().push(now, n);
    }

    /// The job that already answers for `coalesce` in `queue` at `now`, if any: the kept job
    /// of a throttle window, or a debounce key's last job while `waiting` says it still waits.
    pub(super) fn holder(
        &self,
        queue: &str,
        coalesce: &Coalesce,
        now: Timestamp,
        waiting: impl Fn(JobId) -> bool,
    ) -> Option<JobId> {
        let slot = (queue.to_string(), coalesce.key().to_string());
        match coalesce {
            Coalesce::Throttle { .. } => self
                .throttled
                .get(&slot)
                .filter(|(_, until)| *until > now)
                .map(|(id, _)| *id),
            Coalesce::Debounce { .. } => {
                self.debounced.get(&slot).copied().filter(|id| waiting(*id))
            }
        }
    }

    /// Records that the new job `id` took `coalesce`'s key in `queue` at `now`.
    pub(super) fn hold(&mut self, queue: &str, coalesce: &Coalesce, id: JobId, now: Timestamp) {
        let slot = (queue.to_string(), coalesce.key().to_string());
        match coalesce {
            Coalesce::Throttle { window, .. } => {
                self.throttled
                    .insert(slot, (id, crate::clock::later(now, *window)));
            }
            Coalesce::Debounce { .. } => {
                self.debounced.insert(slot, id);
            }
        }
    }
}

/// The running jobs that one fetch's concurrency limits leave out: its worker's leases whose
/// attempts have ended, still in force ([`FetchParams::ended`](crate::FetchParams::ended)).
#[derive(Default)]
pub(super) struct Uncounted {
    queues: HashMap<String, u64>,
    keys: HashMap<(String, String), u32>,
}

impl Uncounted {
    /// Leaves out `r`, a running job, from its queue's count and its key's.
    pub(super) fn leave_out(&mut self, r: &JobRecord) {
        *self.queues.entry(r.queue.to_string()).or_default() += 1;
        if let Some(limits) = &r.key_limits {
            *self
                .keys
                .entry((r.queue.to_string(), limits.key.clone()))
                .or_default() += 1;
        }
    }

    /// How many of `queue`'s running jobs are left out.
    pub(super) fn of_queue(&self, queue: &str) -> u64 {
        self.queues.get(queue).copied().unwrap_or(0)
    }

    /// How many running jobs of the key `slot` (queue, key) are left out.
    pub(super) fn of_key(&self, slot: &(String, String)) -> u32 {
        self.keys.get(slot).copied().unwrap_or(0)
    }
}

/// The starts of one scope, a batch per entry, oldest first.
#[derive(Default)]
struct StartLog {
    batches: VecDeque<(Timestamp, u32)>,
    total: u64,
}

impl StartLog {
    /// The starts after `since`, forgetting the older ones.
    fn since(&mut self, since: Timestamp) -> u64 {
        while let Some(&(at, n)) = self.batches.front() {
            if at > since {
                break;
            }
            self.batches.pop_front();
            self.total -= u64::from(n);
        }
        self.total
    }

    fn push(&mut self, at: Timestamp, n: u32) {
        self.batches.push_back((at, n));
        self.total += u64::from(n);
    }
}
