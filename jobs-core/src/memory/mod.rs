//! `MemoryBackend`: the whole job model in one process's memory, for demos and users' tests.
//!
//! It keeps every guarantee of the other backends (leases, fencing, ordering, retries, unique
//! keys, cron ticks, retention) and passes the same conformance suite; it only forgets
//! everything when the process ends.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;

use crate::backend::*;
use crate::catalog::{KnownJob, PublishedType, StoredVersion};
use crate::clock;
use crate::event::{EventHub, EventStream, JobEvent};
use crate::fates::{self, Fate, Held};
use crate::filter::JobFilter;
use crate::flow::{KeyLimits, QueueFlow, QueueLimits, FLOW_SCAN};
use crate::liveness::{liveness, Liveness};
use crate::model::{
    AttemptError, Enqueued, ErrorReport, JobId, JobRecord, JobStatus, Lease, LeaseToken, LeasedJob,
    NewJob, QueueCounts, Timestamp,
};
use crate::order::RunOrder;
use crate::presence::{StoredSchedule, WorkerInfo};
use crate::wake::{WakeHub, Wakeup};
use crate::Error;

mod finished;
mod flow;
mod indexes;
mod reserved;
mod steps;
mod table;

use crate::fast_hash::{HashMap, HashSet};

use flow::{Flow, Scope, Uncounted};
use indexes::Indexes;
use reserved::Reserved;
use table::Jobs;

/// An in-memory job store. Clones share the same store.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use jobs_core::{Backend, CountsParams, MemoryBackend};
///
/// let backend = MemoryBackend::new();
/// let counts = backend.counts(CountsParams { queue: "email".into() }).await.unwrap();
/// assert_eq!(counts.pending, 0);
/// # });
/// ```
#[derive(Clone, Default)]
pub struct MemoryBackend {
    store: Arc<Mutex<Store>>,
    hub: Arc<WakeHub>,
    events: Arc<EventHub>,
}

impl MemoryBackend {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The payloads of the waiting (pending or scheduled) jobs named `name`, oldest first.
    pub(crate) fn waiting_payloads(&self, name: &str) -> Vec<crate::Json> {
        let store = self.store();
        let mut waiting: Vec<&JobRecord> = store
            .jobs
            .active()
            .filter(|r| {
                &*r.name == name && matches!(r.status, JobStatus::Pending | JobStatus::Scheduled)
            })
            .collect();
        waiting.sort_unstable_by_key(|r| r.id);
        waiting.into_iter().map(|r| r.payload.clone()).collect()
    }

    fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wake(&self, queues: impl IntoIterator<Item = String>) {
        for queue in queues {
            self.hub.notify(&queue);
        }
    }
}

impl std::fmt::Debug for MemoryBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBackend")
            .field("jobs", &self.store().jobs.len())
            .finish()
    }
}

#[derive(Default)]
struct Store {
    jobs: Jobs,
    idx: Indexes,
    cron_ticks: HashMap<String, Timestamp>,
    /// Live workers and when each is forgotten unless it beats again.
    workers: BTreeMap<String, (WorkerInfo, Timestamp)>,
    /// Recorded schedules by name, with when they were recorded.
    schedules: BTreeMap<String, (crate::presence::ScheduleInfo, Timestamp)>,
    /// Workers that hold their liveness, and whether the hold still stands.
    liveness: HashMap<String, bool>,
    /// The paused queues.
    paused: BTreeSet<String>,
    /// The catalog of job types, by name and version.
    types: BTreeMap<(String, u32), PublishedType>,
    flow: Flow,
    /// The leases handed out beyond a queue's concurrency, and the places workers hold.
    reserved: Reserved,
}

/// Whether `record` runs under the lease `token`.
fn runs_under(record: &JobRecord, token: LeaseToken) -> bool {
    record.status == JobStatus::Running && record.lease.as_ref().map(|l| l.token) == Some(token)
}

/// Whether `record` was completed under the lease `token`.
fn completed_under(record: &JobRecord, token: LeaseToken) -> bool {
    record.status == JobStatus::Completed && record.lease.as_ref().map(|l| l.token) == Some(token)
}

/// A stored record as reads show it: only a running job holds a lease.
fn outward(record: &JobRecord) -> JobRecord {
    let mut shown = record.clone();
    if shown.status != JobStatus::Running {
        shown.lease = None;
    }
    shown
}

/// Whether one more job with `limits` may start at `now`, `granted` of its key having been leased
/// by this fetch already.
fn key_room(
    flow: &mut Flow,
    key_running: &HashMap<(String, String), u32>,
    uncounted: &Uncounted,
    queue: &str,
    limits: &KeyLimits,
    granted: u32,
    now: Timestamp,
) -> bool {
    let slot = (queue.to_string(), limits.key.clone());
    let running = key_running
        .get(&slot)
        .copied()
        .unwrap_or(0)
        .saturating_sub(uncounted.of_key(&slot));
    let within_concurrency = limits.concurrency.is_none_or(|n| running + granted < n);
    within_concurrency
        && limits.rate.is_none_or(|rate| {
            let scope = (slot.0, Some(slot.1));
            flow.rate_room(&scope, &rate, now) > granted as usize
        })
}

impl Store {
    /// Changes a stored record in place (never its queue), keeping every index in step.
    fn update<T>(&mut self, id: JobId, change: impl FnOnce(&mut JobRecord) -> T) -> Option<T> {
        let Store { jobs, idx, .. } = self;
        jobs.update(&id, |record| {
            #[cfg(debug_assertions)]
            let queue = record.queue.clone();
            let out = idx.changing(record, change);
            #[cfg(debug_assertions)]
            assert_eq!(
                queue, record.queue,
                "an update never moves a job to another queue"
            );
            out
        })
    }

    /// Removes a job with its index entries.
    fn remove(&mut self, id: JobId) -> Option<JobRecord> {
        let record = self.jobs.remove(&id)?;
        self.idx.unindex(&record);
        Some(record)
    }

    /// The running job `lease` names, if the token still matches.
    fn leased(&self, lease: &LeaseRef) -> Option<&JobRecord> {
        (self.jobs.get(&lease.id)).filter(|r| runs_under(r, lease.token))
    }

    /// The ids of up to `limit` jobs matching `filter` after `after`, in id order.
    fn matching(&self, filter: &JobFilter, after: Option<JobId>, limit: usize) -> Vec<JobId> {
        // A status kept in a set of its own is read from it, not from every job: the dead jobs,
        // in id order, from the cursor on until the page is full.
        if filter.status == Some(JobStatus::Dead) {
            let from = after.map_or(Bound::Unbounded, Bound::Excluded);
            return (self.idx.sets.dead.range((from, Bound::Unbounded)))
                .filter_map(|id| self.jobs.get(id))
                .filter(|r| filter.matches(r))
                .map(|r| r.id)
                .take(limit)
                .collect();
        }
        let fits = |r: &JobRecord| after.is_none_or(|after| r.id > after) && filter.matches(r);
        let mut found: Vec<JobId> = match filter.status {
            Some(JobStatus::Running) => (self.idx.sets.running.iter())
                .filter_map(|id| self.jobs.get(id))
                .filter(|r| fits(r))
                .map(|r| r.id)
                .collect(),
            // The other active statuses are read from the active jobs alone.
            Some(status) if status.is_active() => (self.jobs.active().filter(|r| fits(r)))
                .map(|r| r.id)
                .collect(),
            _ => (self.jobs.all().filter(|r| fits(r)))
                .map(|r| r.id)
                .collect(),
        };
        found.sort_unstable();
        found.truncate(limit);
        found
    }

    /// The active job, other than `record`, that holds `record`'s unique key.
    fn holder_of(&self, record: &JobRecord) -> Option<HeldKey> {
        let key = record.unique_key.as_ref()?;
        let holder = *self
            .idx
            .sets
            .unique
            .get(&(record.queue.to_string(), key.clone()))?;
        (holder != record.id).then(|| HeldKey {
            job: record.id,
            key: key.clone(),
            holder,
        })
    }

    /// Stores a batch: each job is new, a duplicate of the holder of its unique or throttle
    /// key, or folded into its debounce key's waiting job (see [`fates`]). Nothing is stored
    /// when the new jobs would overfill a bounded queue.
    fn insert(&mut self, jobs: Vec<NewJob>, now: Timestamp) -> Result<Vec<Enqueued>, Error> {
        let fates = fates::fates(&jobs, &self.held(&jobs, now));
        self.check_depth(&jobs, &fates)?;
        let answers: Vec<Enqueued> = (0..jobs.len())
            .map(|i| fates::answer(&jobs, &fates, i))
            .collect();
        for ((job, fate), answer) in jobs.into_iter().zip(fates).zip(&answers) {
            self.apply(job, fate, answer.id, now);
        }
        Ok(answers)
    }

    /// The keys the stored jobs hold that `jobs` meet: active jobs' unique keys, throttle
    /// windows that last, debounce keys whose job still waits.
    fn held<'j>(&self, jobs: &'j [NewJob], now: Timestamp) -> Held<'j> {
        let waiting = |id: JobId| {
            self.jobs
                .get(&id)
                .is_some_and(|r| matches!(r.status, JobStatus::Pending | JobStatus::Scheduled))
        };
        let mut held = Held::default();
        for job in jobs {
            if let Some(key) = &job.unique_key {
                if let Some(&id) = self.idx.sets.unique.get(&(job.queue.clone(), key.clone())) {
                    held.unique.insert((job.queue.as_str(), key.as_str()), id);
                }
            }
            if let (Some(coalesce), Some(slot)) = (&job.coalesce, fates::slot(job)) {
                if let Some(id) = self.flow.holder(&job.queue, coalesce, now, waiting) {
                    held.coalesce.insert(slot, id);
                }
            }
        }
        held
    }

    /// [`Error::QueueFull`] when a bounded queue cannot take the batch's new jobs.
    fn check_depth(&self, jobs: &[NewJob], fates: &[Fate]) -> Result<(), Error> {
        let mut new: BTreeMap<&str, u64> = BTreeMap::new();
        for (job, fate) in jobs.iter().zip(fates) {
            if matches!(fate, Fate::New) {
                *new.entry(job.queue.as_str()).or_default() += 1;
            }
        }
        for (queue, n) in new {
            let Some(max_depth) = self.flow.limits.get(queue).and_then(|l| l.max_depth) else {
                continue;
            };
            let counts = self.idx.counts(queue);
            if counts.pending + counts.scheduled + n > max_depth {
                return Err(Error::QueueFull {
                    queue: queue.to_string(),
                    max_depth,
                });
            }
        }
        Ok(())
    }

    /// Carries out `job`'s fate; `answer` is the job it answers with (for a fold, the one it
    /// folds into, stored by now).
    fn apply(&mut self, job: NewJob, fate: Fate, answer: JobId, now: Timestamp) {
        match fate {
            Fate::Duplicate(_) => {}
            Fate::Fold(_) => {
                let status = job.initial_status(now);
                self.update(answer, |r| {
                    r.payload = job.payload;
                    r.version = job.version;
                    r.run_at = job.run_at;
                    r.status = status;
                });
            }
            Fate::New => {
                if let Some(coalesce) = &job.coalesce {
                    self.flow.hold(&job.queue, coalesce, job.id, now);
                }
                if job.key_limits.is_some() {
                    self.flow.keyed.insert(job.queue.clone());
                }
                let record = JobRecord::new(job, now);
                self.idx.index(&record);
                self.jobs.insert(record);
            }
        }
    }

    /// The running jobs of the leases in `ended` that still stand, each once.
    fn uncounted(&self, ended: &[EndedLease]) -> Uncounted {
        let mut uncounted = Uncounted::default();
        let mut seen = HashSet::default();
        for e in ended.iter().filter(|e| seen.insert(e.lease.id)) {
            if let Some(r) = self.leased(&e.lease) {
                uncounted.leave_out(r);
            }
        }
        uncounted
    }

    /// How many more of `queue`'s jobs may start at `now` under its `limits`, leaving the
    /// `uncounted` running jobs out.
    fn queue_room(
        &mut self,
        queue: &str,
        limits: &QueueLimits,
        uncounted: &Uncounted,
        now: Timestamp,
    ) -> usize {
        let mut room = usize::MAX;
        if let Some(n) = limits.concurrency {
            let running = (self.idx.counts(queue).running + self.reserved.places(queue))
                .saturating_sub(uncounted.of_queue(queue))
                .saturating_sub(self.reserved.in_queue(queue, &self.jobs));
            room = room.min(u64::from(n).saturating_sub(running) as usize);
        }
        if let Some(rate) = &limits.rate {
            room = room.min(self.flow.rate_room(&(queue.to_string(), None), rate, now));
        }
        room
    }

    /// Up to `limit` ready jobs of `queue` at `now` within every limit (which leave the
    /// `uncounted` running jobs out), in order.
    fn ready(
        &mut self,
        queue: &str,
        limit: usize,
        limits: Option<&QueueLimits>,
        uncounted: &Uncounted,
        known: impl Fn(&JobRecord) -> bool,
        now: Timestamp,
    ) -> Vec<RunOrder> {
        let room = limits.map_or(limit, |l| {
            limit.min(self.queue_room(queue, l, uncounted, now))
        });
        let Store {
            jobs, idx, flow, ..
        } = self;
        let Some(set) = idx.queues.get(queue).map(|q| &q.waiting) else {
            return Vec::new();
        };
        let mut granted: HashMap<&str, u32> = HashMap::default();
        let mut held_back = 0;
        let mut picked = Vec::with_capacity(room.min(set.len()));
        for key in set {
            if picked.len() == room || held_back == FLOW_SCAN {
                break;
            }
            let Some(r) = jobs.get(&key.id()).filter(|r| r.run_at <= now && known(r)) else {
                continue;
            };
            if let Some(limits) = &r.key_limits {
                let n = granted.entry(limits.key.as_str()).or_default();
                if !key_room(
                    flow,
                    &idx.sets.key_running,
                    uncounted,
                    queue,
                    limits,
                    *n,
                    now,
                ) {
                    held_back += 1;
                    continue;
                }
                *n += 1;
            }
            picked.push(*key);
        }
        picked
    }

    /// Records the starts of the jobs just leased, for the rate limits that count them.
    fn count_starts(&mut self, leased: &[LeasedJob], flow: &[QueueFlow], now: Timestamp) {
        let mut starts: HashMap<Scope, u32> = HashMap::default();
        for job in leased {
            let r = &job.record;
            let queue_rated = flow
                .iter()
                .any(|f| *f.queue == *r.queue && f.limits.rate.is_some());
            if queue_rated {
                *starts.entry((r.queue.to_string(), None)).or_default() += 1;
            }
            if let Some(limits) = r.key_limits.as_ref().filter(|l| l.rate.is_some()) {
                *starts
                    .entry((r.queue.to_string(), Some(limits.key.clone())))
                    .or_default() += 1;
            }
        }
        for (scope, n) in starts {
            self.flow.started(scope, n, now);
        }
    }

    /// The effects to apply for `r`, a workflow step that just became dead.
    fn on_dead(r: &JobRecord) -> Option<Vec<crate::workflow::Effect>> {
        let step = r.step.as_ref().filter(|_| r.status == JobStatus::Dead)?;
        Some(step.on_dead.clone())
    }

    fn finish_retry_or_dead(
        r: &mut JobRecord,
        error: ErrorReport,
        retry_at: Option<Timestamp>,
        now: Timestamp,
    ) {
        r.errors.push(AttemptError::new(r.attempt, now, error));
        r.lease = None;
        match retry_at {
            Some(at) => {
                r.status = JobStatus::Pending;
                r.run_at = at;
            }
            None => {
                r.status = JobStatus::Dead;
                r.finished_at = Some(now);
            }
        }
    }
}

#[async_trait]
impl Backend for MemoryBackend {
    async fn enqueue(&self, p: EnqueueParams) -> Result<Vec<Enqueued>, Error> {
        let mut woken = Vec::new();
        for job in &p.jobs {
            if job.run_at <= p.now && !woken.contains(&job.queue) {
                woken.push(job.queue.clone());
            }
        }
        let out = self.store().insert(p.jobs, p.now)?;
        self.wake(woken);
        Ok(out)
    }

    async fn enqueue_cron(&self, p: CronTickParams) -> Result<Option<JobId>, Error> {
        let queue = p.job.queue.clone();
        let stored = {
            let mut store = self.store();
            if store
                .cron_ticks
                .get(&p.schedule)
                .is_some_and(|last| *last >= p.tick)
            {
                return Ok(None);
            }
            let stored = store.insert(vec![p.job], p.now)?.pop();
            if stored.is_some() {
                store.cron_ticks.insert(p.schedule, p.tick);
            }
            stored
        };
        self.wake([queue]);
        Ok(stored.filter(|s| !s.duplicate).map(|s| s.id))
    }

    async fn fetch(&self, p: FetchParams) -> Result<Vec<LeasedJob>, Error> {
        let mut store = self.store();
        let mut picked: Vec<RunOrder> = Vec::new();
        let known = |r: &JobRecord| KnownJob::admits(p.known.as_deref(), &r.name, r.version);
        let uncounted = store.uncounted(&p.ended);
        for queue in &p.queues {
            let limits = p.flow.iter().find(|f| &f.queue == queue).map(|f| &f.limits);
            let ready = store.ready(queue, p.limit, limits, &uncounted, known, p.now);
            // Most fetches are of one queue: its picks are the fetch's, no copy made.
            if picked.is_empty() {
                picked = ready;
            } else {
                picked.extend(ready);
            }
        }
        picked.sort_unstable();
        picked.truncate(p.limit);
        let reserved = store.reservable(&p, &picked, known);
        let expires_at = clock::later(p.now, p.lease_for);
        // One copy of the worker's id, which every lease of the fetch shares.
        let worker: Arc<str> = p.worker.as_str().into();
        let mut leased = Vec::with_capacity(picked.len() + reserved.len());
        let marked = picked.iter().map(|k| (k, false));
        for (key, reserved) in marked.chain(reserved.iter().map(|k| (k, true))) {
            let id = key.id();
            let token = LeaseToken::new();
            let record = store.update(id, |r| {
                r.status = JobStatus::Running;
                r.attempt += 1;
                r.started_at = Some(p.now);
                r.lease = Some(Lease {
                    worker: worker.clone(),
                    token,
                    expires_at,
                });
                r.clone()
            });
            if let Some(record) = record {
                if reserved {
                    store.reserved.add(id, &record.queue, token);
                }
                leased.push(LeasedJob {
                    record,
                    token,
                    reserved,
                });
            }
        }
        store.count_starts(&leased, &p.flow, p.now);
        Ok(leased)
    }

    async fn complete(&self, p: CompleteParams) -> Result<Vec<bool>, Error> {
        let mut woken = Vec::new();
        let out = {
            let mut store = self.store();
            p.items
                .into_iter()
                .map(|c| {
                    if store.leased(&c.lease).is_none() {
                        // Accepted, and changing nothing, when it repeats the completion that
                        // applied.
                        let record = store.jobs.get(&c.lease.id);
                        return record.is_some_and(|r| completed_under(r, c.lease.token));
                    }
                    // The record keeps its lease (see `Jobs`).
                    let effects = store.update(c.lease.id, |r| {
                        r.status = JobStatus::Completed;
                        r.finished_at = Some(p.now);
                        let effects = r.step.as_ref().map(|s| s.on_complete.clone());
                        r.result = Some(c.result);
                        effects
                    });
                    if let Some(Some(effects)) = &effects {
                        let result = store.jobs.get(&c.lease.id).and_then(|r| r.result.clone());
                        store.apply_effects(effects, result.as_ref(), p.now, &mut woken);
                    }
                    effects.is_some()
                })
                .collect()
        };
        woken.dedup();
        self.wake(woken);
        Ok(out)
    }

    async fn fail(&self, p: FailParams) -> Result<Vec<bool>, Error> {
        let mut woken = Vec::new();
        let out = {
            let mut store = self.store();
            p.items
                .into_iter()
                .map(|f| {
                    if store.leased(&f.lease).is_none() {
                        return false;
                    }
                    let dead = store.update(f.lease.id, |r| {
                        Store::finish_retry_or_dead(r, f.error, f.retry_at, p.now);
                        if r.status == JobStatus::Pending && r.run_at <= p.now {
                            woken.push(r.queue.to_string());
                        }
                        Store::on_dead(r)
                    });
                    if let Some(Some(effects)) = &dead {
                        store.apply_effects(effects, None, p.now, &mut woken);
                    }
                    dead.is_some()
                })
                .collect()
        };
        self.wake(woken);
        Ok(out)
    }

    async fn release(&self, p: ReleaseParams) -> Result<Vec<bool>, Error> {
        let mut woken = Vec::new();
        let out = {
            let mut store = self.store();
            p.items
                .into_iter()
                .map(|release| {
                    if store.leased(&release.lease).is_none() {
                        return false;
                    }
                    store
                        .update(release.lease.id, |r| {
                            r.status = JobStatus::Pending;
                            r.attempt = r.attempt.saturating_sub(1);
                            r.lease = None;
                            if let Some(at) = release.run_at {
                                r.run_at = at;
                            }
                            if r.run_at <= p.now {
                                woken.push(r.queue.to_string());
                            }
                        })
                        .is_some()
                })
                .collect()
        };
        self.wake(woken);
        Ok(out)
    }

    async fn renew(&self, p: RenewParams) -> Result<Vec<bool>, Error> {
        let mut store = self.store();
        Ok(p.items
            .into_iter()
            .map(|lease| {
                let live = store
                    .leased(&lease)
                    .and_then(|r| r.lease.as_ref())
                    .is_some_and(|l| l.expires_at >= p.now);
                live && store
                    .update(lease.id, |r| {
                        if let Some(l) = r.lease.as_mut() {
                            l.expires_at = p.expires_at;
                        }
                    })
                    .is_some()
            })
            .collect())
    }

    fn reserves(&self) -> bool {
        true
    }

    async fn hold_places(&self, p: PlacesParams) -> Result<(), Error> {
        self.store().reserved.hold(p);
        Ok(())
    }

    async fn progress(&self, p: ProgressParams) -> Result<bool, Error> {
        let mut store = self.store();
        if store.leased(&p.lease).is_none() {
            return Ok(false);
        }
        Ok(store
            .jobs
            .update(&p.lease.id, |r| r.progress = p.progress.min(100))
            .is_some())
    }

    async fn read(&self, p: ReadParams) -> Result<Option<JobRecord>, Error> {
        Ok(self.store().jobs.get(&p.id).map(outward))
    }

    async fn list(&self, p: ListParams) -> Result<Vec<JobRecord>, Error> {
        let store = self.store();
        Ok(store
            .matching(&p.filter, p.after, p.limit)
            .into_iter()
            .filter_map(|id| store.jobs.get(&id).map(outward))
            .collect())
    }

    async fn manage(&self, p: ManageParams) -> Result<Managed, Error> {
        let mut woken = Vec::new();
        let managed = {
            let mut store = self.store();
            let (ids, last) = match p.target {
                Target::Ids(ids) => (ids, None),
                Target::Matching { filter, after } => {
                    let ids = store.matching(&filter, after, p.limit);
                    let last = (ids.len() >= p.limit)
                        .then(|| ids.last().copied())
                        .flatten();
                    (ids, last)
                }
            };
            let mut managed = Managed {
                last,
                ..Managed::default()
            };
            for id in ids {
                let Some(record) = store.jobs.get(&id) else {
                    continue;
                };
                let changed = match p.action {
                    Action::Retry => {
                        if !matches!(record.status, JobStatus::Dead | JobStatus::Cancelled) {
                            continue;
                        }
                        if let Some(held) = store.holder_of(record) {
                            managed.held.push(held);
                            continue;
                        }
                        store.update(id, |r| {
                            r.status = if r.awaits_inputs() {
                                JobStatus::Waiting
                            } else {
                                woken.push(r.queue.to_string());
                                JobStatus::Pending
                            };
                            r.attempt = 0;
                            r.run_at = p.now;
                            r.finished_at = None;
                            r.lease = None;
                        })
                    }
                    Action::Cancel => {
                        if !record.status.is_active() {
                            continue;
                        }
                        store.update(id, |r| {
                            r.status = JobStatus::Cancelled;
                            r.lease = None;
                            r.finished_at = Some(p.now);
                        })
                    }
                    Action::Delete => store.remove(id).map(drop),
                };
                if changed.is_some() {
                    managed.changed.push(id);
                }
            }
            managed
        };
        woken.dedup();
        self.wake(woken);
        Ok(managed)
    }

    async fn rescue(&self, p: RescueParams) -> Result<Vec<JobId>, Error> {
        let mut woken = Vec::new();
        let rescued = {
            let mut store = self.store();
            if let RescueTarget::Workers(workers) = &p.target {
                store.reserved.drop_places(workers);
            }
            let targeted = |lease: &Lease| match &p.target {
                RescueTarget::Lapsed => lease.expires_at < p.now,
                RescueTarget::Workers(workers) => workers.iter().any(|w| **w == *lease.worker),
            };
            // The leases that lapsed first are rescued first.
            let mut targets: Vec<(Timestamp, JobId)> = (store.idx.sets.running.iter())
                .filter_map(|id| {
                    let lease = store.jobs.get(id)?.lease.as_ref()?;
                    targeted(lease).then_some((lease.expires_at, *id))
                })
                .collect();
            targets.sort_unstable();
            let expired: Vec<JobId> = targets
                .into_iter()
                .take(p.limit)
                .map(|(_, id)| id)
                .collect();
            for id in &expired {
                let dead = store.update(*id, |r| {
                    // The job keeps its run_at, and so its place among the ready jobs.
                    let retry_at = (r.attempt < r.max_attempts).then_some(r.run_at);
                    Store::finish_retry_or_dead(r, p.error.clone(), retry_at, p.now);
                    woken.push(r.queue.to_string());
                    Store::on_dead(r)
                });
                if let Some(Some(effects)) = &dead {
                    store.apply_effects(effects, None, p.now, &mut woken);
                }
            }
            expired
        };
        woken.dedup();
        self.wake(woken);
        Ok(rescued)
    }

    async fn prune(&self, p: PruneParams) -> Result<u64, Error> {
        let mut store = self.store();
        let Some(finished) = store.idx.queues.get(&p.queue).map(|q| &q.finished) else {
            return Ok(0);
        };
        let total = finished.len() as u64;
        let over_count = p.keep_count.map_or(0, |keep| total.saturating_sub(keep));
        let doomed: Vec<JobId> = finished
            .oldest_first()
            .enumerate()
            .take_while(|(i, (at, _))| {
                (*i as u64) < over_count || p.finished_before.is_some_and(|before| *at < before)
            })
            .take(p.limit)
            .map(|(_, (_, id))| id)
            .collect();
        for id in &doomed {
            store.remove(*id);
        }
        Ok(doomed.len() as u64)
    }

    async fn counts(&self, p: CountsParams) -> Result<QueueCounts, Error> {
        Ok(self.store().idx.counts(&p.queue))
    }

    async fn queue_names(&self, _: QueueNamesParams) -> Result<Vec<String>, Error> {
        let mut names: Vec<String> = self.store().idx.queues.keys().cloned().collect();
        names.sort_unstable();
        Ok(names)
    }

    async fn heartbeat(&self, p: HeartbeatParams) -> Result<(), Error> {
        let mut worker = p.worker;
        worker.last_seen = p.now;
        let mut store = self.store();
        let mut expired = Vec::new();
        store.workers.retain(|id, (_, expires_at)| {
            let live = *expires_at >= p.now;
            if !live {
                expired.push(id.clone());
            }
            live
        });
        store.reserved.drop_places(&expired);
        store
            .workers
            .insert(worker.id.clone(), (worker, p.expires_at));
        Ok(())
    }

    async fn deregister(&self, p: DeregisterParams) -> Result<(), Error> {
        let mut store = self.store();
        store.workers.remove(&p.worker);
        store.liveness.remove(&p.worker);
        store.reserved.drop_places(std::slice::from_ref(&p.worker));
        Ok(())
    }

    async fn hold_liveness(&self, p: HoldParams) -> Result<Liveness, Error> {
        let (keeper, liveness) = liveness();
        self.store().liveness.insert(p.worker.clone(), true);
        keeper.held();
        let store = self.store.clone();
        // The hold lasts as long as the worker keeps its `Liveness`: a worker whose task is
        // dropped mid-run (the in-process picture of a killed process) lets it go.
        tokio::spawn(async move {
            keeper.released().await;
            let mut store = store.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(held) = store.liveness.get_mut(&p.worker) {
                *held = false;
            }
        });
        Ok(liveness)
    }

    async fn gone_workers(&self, _: GoneParams) -> Result<Vec<String>, Error> {
        let store = self.store();
        let mut gone: Vec<String> = store
            .liveness
            .iter()
            .filter(|(_, held)| !**held)
            .map(|(worker, _)| worker.clone())
            .collect();
        gone.sort_unstable();
        Ok(gone)
    }

    async fn live_workers(&self, p: WorkersParams) -> Result<Vec<WorkerInfo>, Error> {
        Ok(self
            .store()
            .workers
            .values()
            .filter(|(_, expires_at)| *expires_at >= p.now)
            .map(|(worker, _)| worker.clone())
            .collect())
    }

    async fn save_schedules(&self, p: SaveSchedulesParams) -> Result<(), Error> {
        let mut store = self.store();
        for schedule in p.schedules {
            store
                .schedules
                .insert(schedule.name.clone(), (schedule, p.now));
        }
        Ok(())
    }

    async fn stored_schedules(&self, _: SchedulesParams) -> Result<Vec<StoredSchedule>, Error> {
        let store = self.store();
        Ok(store
            .schedules
            .values()
            .map(|(schedule, seen_at)| StoredSchedule {
                last_tick: store.cron_ticks.get(&schedule.name).copied(),
                schedule: schedule.clone(),
                seen_at: *seen_at,
            })
            .collect())
    }

    async fn publish_types(&self, p: PublishTypesParams) -> Result<(), Error> {
        let mut store = self.store();
        for info in p.types {
            let key = (info.name.clone(), info.version);
            let published = PublishedType {
                info,
                published_at: p.now,
            };
            store.types.insert(key, published);
        }
        Ok(())
    }

    async fn job_types(&self, _: JobTypesParams) -> Result<Vec<PublishedType>, Error> {
        Ok(self.store().types.values().cloned().collect())
    }

    async fn stored_versions(&self, p: StoredVersionsParams) -> Result<Vec<StoredVersion>, Error> {
        let store = self.store();
        let mut counts: BTreeMap<(&str, u32), u64> = BTreeMap::new();
        let waiting = [JobStatus::Pending, JobStatus::Scheduled, JobStatus::Running];
        for job in store.jobs.active() {
            if waiting.contains(&job.status) && p.names.iter().any(|n| **n == *job.name) {
                *counts.entry((&job.name, job.version)).or_default() += 1;
            }
        }
        Ok(counts
            .into_iter()
            .map(|((name, version), jobs)| StoredVersion {
                name: name.to_string(),
                version,
                jobs,
            })
            .collect())
    }

    async fn subscribe(&self, p: SubscribeParams) -> Result<Wakeup, Error> {
        Ok(self.hub.subscribe(&p.queues, p.worker.as_deref()))
    }

    async fn pause(&self, p: PauseParams) -> Result<(), Error> {
        let mut store = self.store();
        if p.paused {
            store.paused.insert(p.queue);
        } else {
            store.paused.remove(&p.queue);
        }
        Ok(())
    }

    async fn paused_queues(&self, _: PausedParams) -> Result<Vec<String>, Error> {
        Ok(self.store().paused.iter().cloned().collect())
    }

    async fn set_limits(&self, p: SetLimitsParams) -> Result<(), Error> {
        let mut store = self.store();
        if p.limits.is_limited() {
            store.flow.limits.insert(p.queue, p.limits);
        } else {
            store.flow.limits.remove(&p.queue);
        }
        Ok(())
    }

    async fn flow(&self, _: FlowParams) -> Result<Vec<QueueFlow>, Error> {
        let store = self.store();
        let flow = &store.flow;
        let queues: BTreeSet<&String> = flow.limits.keys().chain(&flow.keyed).collect();
        Ok(queues
            .into_iter()
            .map(|queue| QueueFlow {
                queue: queue.clone(),
                limits: flow.limits.get(queue).copied().unwrap_or_default(),
                keyed: flow.keyed.contains(queue),
            })
            .collect())
    }

    async fn finished_since(&self, p: FinishedParams) -> Result<u64, Error> {
        let store = self.store();
        let Some(finished) = store.idx.queues.get(&p.queue).map(|q| &q.finished) else {
            return Ok(0);
        };
        Ok(finished.count_since(p.since) as u64)
    }

    fn publish(&self, events: Vec<JobEvent>) {
        self.events.send(events);
    }

    fn events_heard(&self) -> bool {
        self.events.has_subscribers()
    }

    async fn events(&self, p: EventsParams) -> Result<EventStream, Error> {
        Ok(self.events.subscribe(p.queues))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
