//! The memory store's reserved leases (see [`FetchParams::reserve`]): leased beyond a queue's
//! concurrency limit, counted by no limit while their jobs run; and the places under each
//! queue's limit that each worker's promoted jobs hold, which every limit counts (see
//! [`Backend::hold_places`](crate::Backend::hold_places)).

use super::{runs_under, Jobs, Store};
use crate::backend::{FetchParams, PlacesParams};
use crate::fast_hash::HashMap;
use crate::model::{JobId, JobRecord, LeaseToken};
use crate::order::RunOrder;

/// The reserved leases, by job: its queue and the reserved lease's token, and the places held,
/// by queue and worker. An entry counts only while its job still runs under that token (a
/// lease that lapsed and was rescued, or that ended, leaves a stale entry, which is dropped
/// when met).
#[derive(Default)]
pub(super) struct Reserved {
    leases: HashMap<JobId, (String, LeaseToken)>,
    places: HashMap<String, HashMap<String, u32>>,
}

/// Whether job `id` of `jobs` runs under `token`.
fn holds(jobs: &Jobs, id: &JobId, token: LeaseToken) -> bool {
    jobs.get(id).is_some_and(|r| runs_under(r, token))
}

impl Reserved {
    /// Notes job `id` of `queue` leased under `token` as reserved.
    pub(super) fn add(&mut self, id: JobId, queue: &str, token: LeaseToken) {
        self.leases.insert(id, (queue.to_string(), token));
    }

    /// How many of `queue`'s running jobs run under a reserved lease, dropping stale entries.
    pub(super) fn in_queue(&mut self, queue: &str, jobs: &Jobs) -> u64 {
        self.leases.retain(|id, (_, token)| holds(jobs, id, *token));
        self.leases.values().filter(|(q, _)| q == queue).count() as u64
    }

    /// Sets the places a worker holds under a queue's limit.
    pub(super) fn hold(&mut self, p: PlacesParams) {
        let workers = self.places.entry(p.queue).or_default();
        if p.places == 0 {
            workers.remove(&p.worker);
        } else {
            workers.insert(p.worker, p.places);
        }
    }

    /// The places every worker holds under `queue`'s limit.
    pub(super) fn places(&self, queue: &str) -> u64 {
        self.places
            .get(queue)
            .map_or(0, |w| w.values().map(|n| u64::from(*n)).sum())
    }

    /// Drops the places of `workers`, which are gone, stopped, or no longer heard from.
    pub(super) fn drop_places(&mut self, workers: &[String]) {
        for held in self.places.values_mut() {
            held.retain(|worker, _| !workers.contains(worker));
        }
    }
}

impl Store {
    /// The ready jobs a fetch reserves beside the `picked` ones it leases within the limits
    /// (see [`FetchParams::reserve`]): none unless it fetches one queue with a concurrency
    /// limit, no rate and no keyed jobs; else the next ready ones in order, up to the fetch's
    /// `reserve` plus the picked ones, and the fetch's `limit` in all.
    pub(super) fn reservable(
        &self,
        p: &FetchParams,
        picked: &[RunOrder],
        known: impl Fn(&JobRecord) -> bool,
    ) -> Vec<RunOrder> {
        let ([queue], true) = (p.queues.as_slice(), p.reserve > 0) else {
            return Vec::new();
        };
        let reserving = p.flow.iter().any(|f| {
            &f.queue == queue
                && f.limits.concurrency.is_some()
                && f.limits.rate.is_none()
                && !f.keyed
        });
        let want = (p.reserve + picked.len()).min(p.limit.saturating_sub(picked.len()));
        let Some(set) = (self.idx.queues.get(queue).map(|q| &q.waiting)).filter(|_| reserving)
        else {
            return Vec::new();
        };
        let ready = |key: &&RunOrder| {
            !picked.contains(key)
                && self
                    .jobs
                    .get(&key.id())
                    .is_some_and(|r| r.run_at <= p.now && r.key_limits.is_none() && known(r))
        };
        set.iter().filter(ready).take(want).copied().collect()
    }
}
