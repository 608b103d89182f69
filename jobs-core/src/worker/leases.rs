//! The leases a worker holds: its running and prefetched jobs, each with its context.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::backend::{EndedLease, LeaseRef};
use crate::context::{BackendContext, JobContext};
use crate::fast_hash;
use crate::model::JobId;

/// The jobs this worker holds, each with its context (cancelled when its lease is lost).
#[derive(Default)]
pub(crate) struct Leases {
    held: Mutex<fast_hash::HashMap<JobId, Held>>,
    /// How many places under limits the worker's jobs have freed so far: attempts that ended,
    /// and those whose outcomes were written while their leases still counted (committing, or
    /// counted by their leases and handed on).
    freed: AtomicU64,
    /// The count of `freed` that the waiting fetch waits for ([`Leases::freed_to`]).
    wake_at: AtomicU64,
    /// Fires when `freed` reaches `wake_at`.
    reached: Notify,
    /// A job was ever handed a place ([`Leases::hand_on`]): until then no job holds one, and
    /// [`Leases::places`] need not look.
    handed: AtomicBool,
}

/// One held job.
struct Held {
    ctx: JobContext,
    /// Leased beyond its queue's concurrency ([`LeasedJob::reserved`](crate::LeasedJob)): it
    /// waits for a job of its queue to end and hand it its place.
    reserved: bool,
    /// Reserved, and then handed the place of an ended job: the limits count it among the
    /// worker's places ([`Leases::places`]), not by its lease, so it is never reported as
    /// ended (the places fall instead).
    promoted: bool,
    /// Its attempt ended and handed its place under the limits to a reserved job, which the
    /// limits count instead: it is not reported as ended.
    handed_on: bool,
    /// Its attempt ended and the outcome is being written: a renewal refused now is the
    /// outcome's own write having landed first (or, if the lease really lapsed, the outcome's
    /// write is refused and says so), never a reason to stop the job.
    finishing: bool,
    /// It ended but still counts against limits until its outcome is written: it finishes
    /// through a completion hook, whose commit holds the handler's own writes.
    committing: bool,
}

impl Held {
    /// Whether it counts against limits: running, prefetched, or ended but committing (not
    /// reserved, and not ended with its place handed on).
    fn counts(&self) -> bool {
        !self.reserved && !self.handed_on && (!self.finishing || self.committing)
    }

    /// Whether it ended and handed its place on while the limits counted it by its lease (not
    /// a promoted job, counted among the places), which they do until its outcome is written.
    fn handed_on_by_lease(&self) -> bool {
        self.handed_on && !self.promoted
    }

    /// Whether its attempt ended, its outcome not yet written, and no limit counts it by its
    /// lease.
    fn ended(&self) -> bool {
        self.finishing && !self.committing && !self.handed_on && !self.reserved && !self.promoted
    }
}

impl Leases {
    fn held(&self) -> MutexGuard<'_, fast_hash::HashMap<JobId, Held>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds a fetched job, `reserved` or not. An earlier attempt of the job still held here
    /// lost its lease (it lapsed, and the job was leased to this worker again): it is told to
    /// stop, as a job whose renewal is refused is.
    pub(super) fn insert(&self, ctx: JobContext, reserved: bool) {
        let lease = ctx.lease();
        let held = Held {
            ctx,
            reserved,
            promoted: false,
            handed_on: false,
            finishing: false,
            committing: false,
        };
        let earlier = self.held().insert(lease.id, held);
        if let Some(earlier) = earlier.filter(|h| h.ctx.lease() != lease) {
            earlier.ctx.cancel();
        }
    }

    /// Marks the attempt under `ended`, which ended, as having handed its place to the reserved
    /// attempt under `next`, which counts from now on: no place is freed, and `ended` is not
    /// reported as ended (see [`Leases::finishing`]). Does nothing, and says so, when either is
    /// no longer held under its lease: `ended` lost it (no limit counts it any more: it has no
    /// place to hand on), or a later attempt of `next`'s job replaced it.
    pub(super) fn hand_on(&self, ended: LeaseRef, next: LeaseRef) -> bool {
        let mut held = self.held();
        if !held.get(&ended.id).is_some_and(|h| h.ctx.lease() == ended) {
            return false;
        }
        match held.get_mut(&next.id) {
            Some(h) if h.ctx.lease() == next => {
                h.reserved = false;
                h.promoted = true;
            }
            _ => return false,
        }
        self.handed.store(true, SeqCst);
        if let Some(h) = held.get_mut(&ended.id) {
            h.finishing = true;
            h.handed_on = true;
        }
        true
    }

    /// Whether the attempt under `lease` is still held (its lease not lost, nor replaced).
    pub(super) fn holds(&self, lease: LeaseRef) -> bool {
        self.held()
            .get(&lease.id)
            .is_some_and(|h| h.ctx.lease() == lease)
    }

    /// How many places under each queue's limits the promoted jobs hold (queues with none are
    /// left out): those that run, and those that ended but commit through a completion hook.
    pub(super) fn places(&self) -> HashMap<String, u32> {
        let mut places = HashMap::new();
        if !self.handed.load(SeqCst) {
            return places;
        }
        for h in self.held().values().filter(|h| h.promoted && h.counts()) {
            *places.entry(h.ctx.queue().to_string()).or_default() += 1;
        }
        places
    }

    /// Whether a held job of `queue` counts against its limits and has not ended: it can hand
    /// its place to a reserved job when it ends.
    pub(super) fn holds_place(&self, queue: &str) -> bool {
        self.held()
            .values()
            .any(|h| h.counts() && !h.finishing && h.ctx.queue() == queue)
    }

    /// Marks a job whose attempt ended: its lease is still renewed until the outcome is
    /// written, but a refused renewal no longer counts as a lost lease.
    ///
    /// A job that finishes through a completion hook keeps counting against limits until its
    /// outcome is written: its handler's writes commit only then, and a limit of one per key
    /// must not let the next job of the key read around them.
    ///
    /// A reserved job that ends unstarted (handed back) frees no place: it never held one.
    ///
    /// An earlier attempt that a later one of the same job replaced (see [`Leases::insert`])
    /// leaves the later one as it is.
    pub(super) fn finishing(&self, lease: LeaseRef) {
        if let Some(held) = self.held().get_mut(&lease.id) {
            if held.ctx.lease() != lease {
                return;
            }
            held.finishing = true;
            held.committing = !held.reserved && held.ctx.has_completion_hook();
            if held.committing || held.reserved {
                return;
            }
        }
        self.free_one();
    }

    /// Counts one freed place, waking the fetch that waits for it.
    fn free_one(&self) {
        if self.freed.fetch_add(1, SeqCst) + 1 >= self.wake_at.load(SeqCst) {
            self.reached.notify_one();
        }
    }

    /// How many places under limits the worker's jobs have freed so far (see `freed`): a mark
    /// for [`Leases::freed_to`], taken before what it waits for is decided, so that a place
    /// freed meanwhile is not missed.
    pub(super) fn freed_mark(&self) -> u64 {
        self.freed.load(SeqCst)
    }

    /// Resolves once the worker's jobs have freed places up to `mark`. A fetch that limits hold
    /// back waits on it, woken once rather than at each job's end. One fetch loop waits at a
    /// time.
    pub(super) async fn freed_to(&self, mark: u64) {
        self.wake_at.store(mark, SeqCst);
        // A place freed before the store saw the old mark: read the count after it. A wake left
        // over from an earlier wait only makes the loop read it again.
        while self.freed.load(SeqCst) < mark {
            self.reached.notified().await;
        }
    }

    /// How many held jobs of each queue the store still counts against limits: running,
    /// prefetched, ended but committing, or ended and handed on by their leases, their
    /// outcomes not yet written.
    pub(super) fn counted(&self) -> HashMap<String, usize> {
        let mut counted = HashMap::new();
        for h in self
            .held()
            .values()
            .filter(|h| h.counts() || h.handed_on_by_lease())
        {
            *counted.entry(h.ctx.queue().to_string()).or_default() += 1;
        }
        counted
    }

    /// The held jobs whose attempts have ended, their outcomes not yet written, that no limit
    /// counts ([`FetchParams::ended`](crate::backend::FetchParams::ended)).
    pub(super) fn ended(&self) -> Vec<EndedLease> {
        self.held()
            .values()
            .filter(|h| h.ended())
            .map(|h| EndedLease {
                queue: h.ctx.queue().to_string(),
                lease: h.ctx.lease(),
            })
            .collect()
    }

    /// Forgets the attempt under `lease`, whose outcome was written or given up on; not a later
    /// attempt of the same job that this worker holds now.
    ///
    /// An attempt whose lease the limits counted up to its outcome's write frees a place then: a
    /// committing one, and one that handed its place on while counted by its lease (the limits
    /// counted that lease beside the place of the job it handed on to, both for a moment, and
    /// the fetch that found no room while they did waits for this).
    pub(super) fn remove(&self, lease: LeaseRef) {
        let counted = match self.held().entry(lease.id) {
            Entry::Occupied(held) if held.get().ctx.lease() == lease => {
                let held = held.remove();
                held.committing || held.handed_on_by_lease()
            }
            _ => false,
        };
        if counted {
            self.free_one();
        }
    }

    /// Tells every held job to stop (the grace period ran out).
    pub(super) fn stop_all(&self) {
        for h in self.held().values() {
            h.ctx.cancel();
        }
    }

    /// The leases held now.
    pub(super) fn snapshot(&self) -> Vec<LeaseRef> {
        self.held().values().map(|h| h.ctx.lease()).collect()
    }

    /// A renewal of `lease` was refused: a running job is forgotten and told to stop (true);
    /// a finishing one is left to its outcome's write (false).
    pub(super) fn lost(&self, lease: LeaseRef) -> bool {
        let mut held = self.held();
        let running = held
            .get(&lease.id)
            .is_some_and(|h| h.ctx.lease() == lease && !h.finishing);
        if running {
            if let Some(h) = held.remove(&lease.id) {
                h.ctx.cancel();
            }
        }
        running
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Backend, EnqueueParams, FetchParams};
    use crate::clock::{Clock, SystemClock};
    use crate::memory::MemoryBackend;
    use crate::state::StateMap;
    use crate::JobError;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Nothing {
        n: u64,
    }

    impl crate::Job for Nothing {
        const NAME: &'static str = "leases_test_nothing";
        type Output = ();
        async fn run(self, _: JobContext, _: StateMap) -> Result<(), JobError> {
            Ok(())
        }
    }

    /// `n` jobs leased from a memory store, with their contexts.
    async fn contexts(n: u64) -> Vec<JobContext> {
        let (any, leased) = leased(n).await;
        leased
            .iter()
            .map(|j| JobContext::new(any.clone(), j))
            .collect()
    }

    /// `n` jobs leased from a memory store, and the store.
    async fn leased(n: u64) -> (crate::AnyBackend, Vec<crate::LeasedJob>) {
        let backend = MemoryBackend::new();
        let now = SystemClock.now();
        let jobs = (0..n)
            .map(|n| {
                crate::enqueue::Enqueue::from(Nothing { n })
                    .to_new_job(now)
                    .unwrap()
            })
            .collect();
        backend.enqueue(EnqueueParams { jobs, now }).await.unwrap();
        let leased = backend
            .fetch(FetchParams {
                ended: Vec::new(),
                known: None,
                queues: vec!["default".into()],
                limit: n as usize,
                worker: "w".into(),
                lease_for: std::time::Duration::from_secs(5),
                now,
                flow: Vec::new(),
                reserve: 0,
                deliver: 0,
            })
            .await
            .unwrap();
        (crate::AnyBackend::new(backend), leased)
    }

    #[tokio::test]
    async fn a_job_leased_again_stops_its_earlier_attempt_which_forgets_only_its_own_lease() {
        let (any, leased) = leased(2).await;
        let mut again = leased[0].clone();
        again.token = crate::LeaseToken::new();
        let earlier = JobContext::new(any.clone(), &leased[0]);
        let later = JobContext::new(any.clone(), &again);
        let other = JobContext::new(any, &leased[1]);
        let leases = Leases::default();
        leases.insert(earlier.clone(), false);
        leases.insert(later.clone(), false);
        assert!(
            earlier.is_cancelled(),
            "the earlier attempt's lease lapsed: it is told to stop"
        );
        assert!(!later.is_cancelled());
        leases.insert(other.clone(), false);
        assert!(
            !leases.hand_on(other.lease(), earlier.lease()),
            "no place goes to the earlier attempt"
        );
        assert!(leases.places().is_empty(), "nor to the later one");
        leases.finishing(earlier.lease());
        assert!(
            leases.ended().is_empty(),
            "the earlier attempt's end leaves the later one running"
        );
        leases.remove(earlier.lease());
        leases.remove(other.lease());
        assert_eq!(
            leases.snapshot(),
            vec![later.lease()],
            "the earlier attempt's outcome forgets its own lease only"
        );
        leases.stop_all();
        assert!(later.is_cancelled(), "the grace period's end stops it");
        leases.remove(later.lease());
        assert!(leases.snapshot().is_empty());
    }

    #[tokio::test]
    async fn a_promoted_job_holds_a_place_and_is_never_reported_ended() {
        let [counted, reserved]: [JobContext; 2] = contexts(2).await.try_into().unwrap();
        let leases = Leases::default();
        leases.insert(counted.clone(), false);
        leases.insert(reserved.clone(), true);
        assert!(leases.places().is_empty(), "a reserved job holds no place");
        assert!(leases.hand_on(counted.lease(), reserved.lease()));
        assert_eq!(
            leases.places(),
            HashMap::from([(counted.queue().to_string(), 1)]),
            "handed the place of the ended job"
        );
        assert!(
            leases.ended().is_empty(),
            "the ended job handed its place on"
        );
        leases.finishing(reserved.lease());
        assert!(leases.places().is_empty(), "its place given up as it ends");
        assert!(
            leases.ended().is_empty(),
            "nor reported ended: the places fell instead"
        );
    }

    #[tokio::test]
    async fn a_refused_renewal_stops_a_running_job_but_not_a_finishing_one() {
        let [running, finishing]: [JobContext; 2] = contexts(2).await.try_into().unwrap();
        let leases = Leases::default();
        leases.insert(running.clone(), false);
        leases.insert(finishing.clone(), false);
        leases.finishing(finishing.lease());

        assert!(
            leases.lost(running.lease()),
            "a running job's lease is lost"
        );
        assert!(running.is_cancelled());
        assert!(
            !leases.lost(finishing.lease()),
            "not lost: its outcome is being written"
        );
        assert!(!finishing.is_cancelled());
        assert_eq!(
            leases.snapshot(),
            vec![finishing.lease()],
            "still renewed until written"
        );
        assert_eq!(
            leases.ended(),
            vec![EndedLease {
                queue: "default".into(),
                lease: finishing.lease()
            }],
            "no limit counts it"
        );
    }

    #[tokio::test]
    async fn a_wait_for_freed_places_resolves_once_enough_attempts_ended() {
        use std::time::Duration;
        let [a, b]: [JobContext; 2] = contexts(2).await.try_into().unwrap();
        let leases = Leases::default();
        leases.insert(a.clone(), false);
        leases.insert(b.clone(), false);
        let mark = leases.freed_mark();
        leases.finishing(a.lease());
        let wait = leases.freed_to(mark + 2);
        tokio::pin!(wait);
        assert!(
            tokio::time::timeout(Duration::from_millis(30), &mut wait)
                .await
                .is_err(),
            "one of two places freed: still waiting"
        );
        leases.finishing(b.lease());
        tokio::time::timeout(Duration::from_secs(5), &mut wait)
            .await
            .expect("the second place freed, counted from the mark taken before the first");
        assert_eq!(leases.freed_mark(), mark + 2);
    }

    /// A job that lost its lease while its place waited for a fetch has no place to hand on:
    /// the reserved job is not promoted (it would run beside the job's next attempt, one over
    /// the limit).
    #[tokio::test]
    async fn a_job_that_lost_its_lease_hands_no_place_on() {
        let [counted, reserved]: [JobContext; 2] = contexts(2).await.try_into().unwrap();
        let leases = Leases::default();
        leases.insert(counted.clone(), false);
        leases.insert(reserved.clone(), true);
        assert!(
            leases.lost(counted.lease()),
            "a running job loses its lease"
        );
        assert!(!leases.holds(counted.lease()));
        assert!(!leases.hand_on(counted.lease(), reserved.lease()));
        assert!(leases.places().is_empty(), "no place handed on");
        assert!(
            leases.holds(reserved.lease()),
            "still waiting, to be handed back"
        );
    }

    /// A reserved job handed back unstarted never held a place: it frees none, so a fetch that
    /// waits for room is not woken by it (it would fetch, reserve and hand back again).
    #[tokio::test]
    async fn a_reserved_job_handed_back_frees_no_place() {
        let [reserved, _]: [JobContext; 2] = contexts(2).await.try_into().unwrap();
        let leases = Leases::default();
        leases.insert(reserved.clone(), true);
        let mark = leases.freed_mark();
        leases.finishing(reserved.lease());
        leases.remove(reserved.lease());
        assert_eq!(leases.freed_mark(), mark, "no place freed");
    }

    /// The limits count an attempt that handed its place on by its lease until its outcome is
    /// written: that write frees the place, as a committing job's does, and wakes a fetch that
    /// found no room meanwhile (which would otherwise wait out its retry).
    #[tokio::test]
    async fn the_write_of_an_attempt_that_handed_its_place_on_frees_a_place() {
        use std::time::Duration;
        let [counted, first, reserved]: [JobContext; 3] = contexts(3).await.try_into().unwrap();
        let leases = Leases::default();
        leases.insert(counted.clone(), false);
        leases.insert(first.clone(), true);
        leases.insert(reserved.clone(), true);
        let queue = counted.queue().to_string();
        assert!(leases.hand_on(counted.lease(), first.lease()));
        assert!(leases.hand_on(first.lease(), reserved.lease()));
        leases.finishing(reserved.lease());
        assert_eq!(
            leases.counted(),
            HashMap::from([(queue, 1)]),
            "the store counts the first ended job by its lease until its write"
        );
        let mark = leases.freed_mark();
        leases.remove(first.lease());
        assert_eq!(
            leases.freed_mark(),
            mark,
            "a promoted job that handed its place on was counted among the places: nothing freed"
        );
        let wait = leases.freed_to(mark + 1);
        tokio::pin!(wait);
        assert!(
            tokio::time::timeout(Duration::from_millis(30), &mut wait)
                .await
                .is_err(),
            "the ended job's lease still counts: nothing freed"
        );
        leases.remove(counted.lease());
        tokio::time::timeout(Duration::from_secs(5), &mut wait)
            .await
            .expect("its outcome written: its place is free");
        leases.remove(reserved.lease());
        assert_eq!(
            leases.freed_mark(),
            mark + 1,
            "the promoted job freed its place as it ended, not again at its write"
        );
    }
}
