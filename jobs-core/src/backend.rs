//! The one trait every storage backend implements, with a params struct per operation.
//!
//! Operations are batch-first (enqueue many, fetch n, complete many), every write after a fetch
//! carries the lease token it was handed, and every operation that depends on the time takes
//! `now`, so backoff, delay, lease and cron behaviour is tested without sleeping. Backends only
//! store and move jobs: backoff arithmetic, cron ticks, retention policy and the worker loop live
//! in jobs-core once.

use std::any::Any;
use std::time::Duration;

use async_trait::async_trait;

use crate::catalog::{JobTypeInfo, KnownJob, PublishedType, StoredVersion};
use crate::error::ErrorKind;
use crate::event::{EventStream, JobEvent};
use crate::filter::JobFilter;
use crate::flow::{QueueFlow, QueueLimits};
use crate::liveness::Liveness;
pub(crate) use crate::model::LeaseRef;
use crate::model::{
    Enqueued, ErrorReport, JobId, JobRecord, Json, LeasedJob, NewJob, QueueCounts, Timestamp,
};
use crate::presence::{ScheduleInfo, StoredSchedule, WorkerInfo};
use crate::wake::Wakeup;
use crate::Error;

/// Stores new jobs.
#[derive(Clone, Debug)]
pub struct EnqueueParams {
    /// The jobs, each with a client-made id.
    pub jobs: Vec<NewJob>,
    /// The current time: a job whose `run_at` is later is `scheduled`, else `pending`.
    pub now: Timestamp,
}

/// Enqueues the job of one cron tick, once, however many workers ask.
#[derive(Clone, Debug)]
pub struct CronTickParams {
    /// The schedule's stable name (the job's name).
    pub schedule: String,
    /// The tick being enqueued.
    pub tick: Timestamp,
    /// The job to store when this tick is later than the last one stored for the schedule.
    pub job: NewJob,
    /// The current time.
    pub now: Timestamp,
}

/// Leases up to `limit` ready jobs.
#[derive(Clone, Debug)]
pub struct FetchParams {
    /// Queues to take from; ready jobs of all of them are ordered together.
    pub queues: Vec<String>,
    /// At most this many jobs.
    pub limit: usize,
    /// The fetching worker's id, stored in the lease.
    pub worker: String,
    /// How long the lease lasts unless renewed.
    pub lease_for: Duration,
    /// The current time: only jobs with `run_at <= now` are ready.
    pub now: Timestamp,
    /// Only jobs of these names, each stored at its version or older (`None`: every job). A
    /// worker passes the names and versions it runs, so a job it does not know, or stored by a
    /// newer release at a newer version, stays waiting, in its place, for a worker that knows
    /// it (during a rolling deploy, an older release's workers leave the newer release's jobs
    /// alone).
    pub known: Option<Vec<KnownJob>>,
    /// The limits to enforce, for those of `queues` that have any or that hold keyed jobs (as
    /// [`Backend::flow`] last told the worker). A fetch leases no job beyond a queue's
    /// concurrency or rate, nor beyond a job's own [`KeyLimits`](crate::KeyLimits) (which
    /// every backend checks, listed here or not); such a job stays waiting, in its place.
    pub flow: Vec<QueueFlow>,
    /// The fetching worker's leases whose attempts have ended, their outcomes perhaps not yet
    /// written: their handlers run no more, so no concurrency limit (a queue's or a key's)
    /// counts them, and the worker's next jobs need not wait for those writes. A backend
    /// counts one out only while its job still runs under that very lease (same id and token),
    /// so a job leased again by another worker still counts, and each job once, however often
    /// it is listed. Empty is always correct.
    pub ended: Vec<EndedLease>,
    /// How many leases beyond the concurrency limit of the fetch's one queue a backend that
    /// [`reserves`](Backend::reserves) may hand out as *reserved* ([`LeasedJob::reserved`]),
    /// besides the jobs the limit has room for; at most this many plus the limited jobs it
    /// leases, and at most `limit` in all. No limit counts a reserved lease: the worker starts
    /// a reserved job only in the place of one of its own limited jobs that ended, and counts
    /// that place as its own ([`hold_places`](Backend::hold_places)), so it holds leases beyond
    /// the limit (prefetch) while no more run than the limit allows. A fetch of several
    /// queues, or of a queue with a rate or keyed jobs, reserves nothing. 0: none.
    pub reserve: usize,
    /// How many jobs the fetching worker takes straight away should this fetch find nothing:
    /// it then waits idle on its wake-up subscription (made with the same
    /// [`worker`](SubscribeParams::worker)). A backend may lease up to this many of the jobs
    /// that become ready in the fetch's queues from then on to that worker at once, without its
    /// fetching them, and hand them to its subscription ([`Wakeup::delivered`]); a later fetch
    /// of the worker that leases jobs, or offers none, ends that, and so does
    /// [`end_deliveries`](Backend::end_deliveries), while one that finds nothing again offers
    /// its own count, less the deliveries not yet handed over. Only jobs the worker
    /// [`known`](Self::known) runs, of a queue without limits and not paused, are delivered. 0:
    /// none (a backend may always deliver none).
    pub deliver: usize,
}

/// A lease whose attempt has ended (see [`FetchParams::ended`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndedLease {
    /// The job's queue.
    pub queue: String,
    /// The job and its lease.
    pub lease: LeaseRef,
}

/// One successful job.
#[derive(Clone, Debug)]
pub struct Completion {
    /// The job and its lease.
    pub lease: LeaseRef,
    /// The handler's result as JSON.
    pub result: Json,
}

/// Marks jobs completed.
#[derive(Clone, Debug)]
pub struct CompleteParams {
    /// The jobs.
    pub items: Vec<Completion>,
    /// The current time (the finish time).
    pub now: Timestamp,
}

/// One failed attempt.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The job and its lease.
    pub lease: LeaseRef,
    /// The attempt's error, appended to the job's history as an
    /// [`AttemptError`](crate::AttemptError) with the job's attempt number and `now`.
    pub error: ErrorReport,
    /// When to run again; `None` sends the job to dead.
    pub retry_at: Option<Timestamp>,
}

impl Failure {
    /// The failure that sends a fetched job whose stored record does not decode (`error`, as
    /// the backend's decoding reported it) straight to dead, with an error of kind decode: no
    /// attempt can succeed on it. A backend's fetch writes it and leaves the job out of its
    /// answer, so one bad job never holds back the rest of its batch.
    pub fn undecodable(lease: LeaseRef, error: &Error) -> Self {
        Failure {
            lease,
            error: ErrorReport::new(ErrorKind::Decode, error.detail()),
            retry_at: None,
        }
    }
}

/// Records failed attempts.
#[derive(Clone, Debug)]
pub struct FailParams {
    /// The failures.
    pub items: Vec<Failure>,
    /// The current time.
    pub now: Timestamp,
}

/// One leased job handed back.
#[derive(Clone, Copy, Debug)]
pub struct Release {
    /// The job and its lease.
    pub lease: LeaseRef,
    /// When it may run again; `None` keeps its `run_at` (and so its place in the queue).
    pub run_at: Option<Timestamp>,
}

/// Hands leased jobs back to pending without spending an attempt (graceful shutdown, snooze).
#[derive(Clone, Debug)]
pub struct ReleaseParams {
    /// The jobs.
    pub items: Vec<Release>,
    /// The current time.
    pub now: Timestamp,
}

/// Sets how many places under a queue's concurrency limit a worker's promoted jobs hold (see
/// [`Backend::hold_places`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacesParams {
    /// The worker's id.
    pub worker: String,
    /// The queue.
    pub queue: String,
    /// How many of the worker's jobs of `queue` run on places handed on by ended jobs: reserved
    /// leases ([`LeasedJob::reserved`]) that the worker started. It replaces what the worker
    /// held before; 0 holds none.
    pub places: u32,
}

/// Extends leases that a live worker still holds.
#[derive(Clone, Debug)]
pub struct RenewParams {
    /// The jobs and their leases.
    pub items: Vec<LeaseRef>,
    /// The new expiry.
    pub expires_at: Timestamp,
    /// The current time: a lease that already lapsed is not renewed.
    pub now: Timestamp,
}

/// Records a running job's progress.
#[derive(Clone, Copy, Debug)]
pub struct ProgressParams {
    /// The job and its lease.
    pub lease: LeaseRef,
    /// Percent done, 0 to 100.
    pub progress: u8,
    /// The current time.
    pub now: Timestamp,
}

/// Reads one job.
#[derive(Clone, Copy, Debug)]
pub struct ReadParams {
    /// The job.
    pub id: JobId,
}

/// Lists the jobs matching a filter in id order (oldest first), a page at a time.
#[derive(Clone, Debug)]
pub struct ListParams {
    /// Which jobs.
    pub filter: JobFilter,
    /// Only jobs after this id (the last id of the previous page).
    pub after: Option<JobId>,
    /// At most this many.
    pub limit: usize,
}

/// What [`Backend::manage`] does to each job it selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// A dead or cancelled job goes back to pending, due now, with fresh attempts (its error
    /// history kept); a job whose unique key another active job holds is left as it is and
    /// reported in [`Managed::held`]. Jobs in other statuses are left alone.
    Retry,
    /// A scheduled, pending or running job is cancelled (a running job's lease is revoked).
    /// Finished jobs are left alone.
    Cancel,
    /// The job is removed for good, whatever its status.
    Delete,
}

/// Which jobs [`Backend::manage`] applies its action to.
#[derive(Clone, Debug)]
pub enum Target {
    /// These jobs (ids that do not exist are skipped).
    Ids(Vec<JobId>),
    /// The jobs matching `filter`, in id order, starting after `after`.
    Matching {
        /// Which jobs.
        filter: JobFilter,
        /// The cursor: only jobs after this id.
        after: Option<JobId>,
    },
}

/// Retries, cancels or deletes jobs, by id or by filter, a bounded batch per call.
#[derive(Clone, Debug)]
pub struct ManageParams {
    /// What to do.
    pub action: Action,
    /// To which jobs.
    pub target: Target,
    /// For [`Target::Matching`]: examine at most this many matching jobs.
    pub limit: usize,
    /// The current time (a retried job's `run_at`, a cancelled job's finish time).
    pub now: Timestamp,
}

/// A unique key that kept a job from being retried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldKey {
    /// The job that was not retried.
    pub job: JobId,
    /// Its unique key.
    pub key: String,
    /// The active job holding the key.
    pub holder: JobId,
}

/// What one [`Backend::manage`] call did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Managed {
    /// The jobs the action changed.
    pub changed: Vec<JobId>,
    /// Retries refused because another active job holds the key.
    pub held: Vec<HeldKey>,
    /// For [`Target::Matching`]: the last matching id examined, the cursor of the next batch;
    /// `None` when fewer than `limit` jobs matched, so none are left.
    pub last: Option<JobId>,
}

/// Rescues running jobs whose worker is gone: back to pending (keeping their `run_at`), or dead
/// when out of attempts.
#[derive(Clone, Debug)]
pub struct RescueParams {
    /// Which running jobs.
    pub target: RescueTarget,
    /// The current time.
    pub now: Timestamp,
    /// At most this many per call.
    pub limit: usize,
    /// The error recorded for each rescued attempt.
    pub error: ErrorReport,
}

/// The running jobs a rescue takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RescueTarget {
    /// Those whose lease lapsed before `now`.
    Lapsed,
    /// Those leased by these workers, whatever their lease: workers whose liveness ended
    /// (see [`Backend::gone_workers`]).
    Workers(Vec<String>),
}

/// Subscribes to job events (see [`Backend::events`]).
#[derive(Clone, Debug, Default)]
pub struct EventsParams {
    /// The queues whose events to receive; every queue when empty.
    pub queues: Vec<String>,
}

/// Holds a worker's liveness (see [`Backend::hold_liveness`]).
#[derive(Clone, Debug)]
pub struct HoldParams {
    /// The worker's id.
    pub worker: String,
}

/// Lists the workers whose liveness ended.
#[derive(Clone, Copy, Debug)]
pub struct GoneParams {}

/// Removes finished jobs that the retention policy no longer keeps. The worker calls it for
/// each of its queues on its prune timer, with neither limit for a queue that keeps every
/// finished job: nothing is removed then, but a store may do its upkeep (PostgreSQL folds the
/// queue's finished counts).
#[derive(Clone, Debug)]
pub struct PruneParams {
    /// The queue.
    pub queue: String,
    /// Keep at most this many completed or cancelled jobs (the newest).
    pub keep_count: Option<u64>,
    /// Remove completed or cancelled jobs that finished before this time.
    pub finished_before: Option<Timestamp>,
    /// At most this many per call, so pruning never stalls the queue.
    pub limit: usize,
    /// The current time.
    pub now: Timestamp,
}

/// Counts a queue's jobs by status.
#[derive(Clone, Debug)]
pub struct CountsParams {
    /// The queue.
    pub queue: String,
}

/// Names every queue the store holds jobs of.
#[derive(Clone, Copy, Debug, Default)]
pub struct QueueNamesParams {}

/// Pauses or resumes a queue (see [`Backend::pause`]).
#[derive(Clone, Debug)]
pub struct PauseParams {
    /// The queue.
    pub queue: String,
    /// Paused (`true`) or running again (`false`).
    pub paused: bool,
}

/// Lists the paused queues.
#[derive(Clone, Copy, Debug, Default)]
pub struct PausedParams {}

/// Stores a queue's flow limits (see [`Backend::set_limits`]).
#[derive(Clone, Debug)]
pub struct SetLimitsParams {
    /// The queue.
    pub queue: String,
    /// Its limits; all `None` removes them.
    pub limits: QueueLimits,
}

/// Reads what fetches must enforce (see [`Backend::flow`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowParams {}

/// Counts the jobs of a queue finished (completed or cancelled) at or after `since`.
#[derive(Clone, Debug)]
pub struct FinishedParams {
    /// The queue.
    pub queue: String,
    /// The earliest finish time counted.
    pub since: Timestamp,
}

/// Records that a worker is alive.
#[derive(Clone, Debug)]
pub struct HeartbeatParams {
    /// The worker (its `last_seen` is replaced by `now`).
    pub worker: WorkerInfo,
    /// Forget the worker after this time unless it beats again.
    pub expires_at: Timestamp,
    /// The current time.
    pub now: Timestamp,
}

/// Forgets a worker that stopped.
#[derive(Clone, Debug)]
pub struct DeregisterParams {
    /// The worker's id.
    pub worker: String,
}

/// Lists the live workers.
#[derive(Clone, Copy, Debug)]
pub struct WorkersParams {
    /// The current time: workers whose heartbeat expired before it are not listed.
    pub now: Timestamp,
}

/// Records the cron schedules a worker runs.
#[derive(Clone, Debug)]
pub struct SaveSchedulesParams {
    /// The schedules (an existing one of the same name is replaced).
    pub schedules: Vec<ScheduleInfo>,
    /// The current time.
    pub now: Timestamp,
}

/// Lists the recorded cron schedules.
#[derive(Clone, Copy, Debug, Default)]
pub struct SchedulesParams {}

/// Publishes job types to the catalog.
#[derive(Clone, Debug)]
pub struct PublishTypesParams {
    /// The types (an existing entry of the same name and version is replaced).
    pub types: Vec<JobTypeInfo>,
    /// The current time.
    pub now: Timestamp,
}

/// Lists the catalog of job types.
#[derive(Clone, Copy, Debug, Default)]
pub struct JobTypesParams {}

/// Counts the waiting and running jobs of some names by stored version.
#[derive(Clone, Debug)]
pub struct StoredVersionsParams {
    /// The stored names.
    pub names: Vec<String>,
}

/// Asks for a wake-up signal.
#[derive(Clone, Debug)]
pub struct SubscribeParams {
    /// The queues whose new ready jobs fire it.
    pub queues: Vec<String>,
    /// The worker that waits on it, to whom jobs leased straight away are handed (see
    /// [`FetchParams::deliver`]); `None`: signals only.
    pub worker: Option<String>,
}

/// Ends the deliveries to a worker (see [`Backend::end_deliveries`]).
#[derive(Clone, Debug)]
pub struct EndDeliveriesParams {
    /// The worker.
    pub worker: String,
    /// The queues it fetched from.
    pub queues: Vec<String>,
}

/// A job store. Every backend implements all of it and passes the conformance suite
/// (`jobs_core::testing`, feature `testing`).
///
/// Per-item results (`Vec<bool>`) say which writes were accepted: a write whose lease token no
/// longer matches a running job is refused and changes nothing.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Stores jobs; a unique key held by an active job of the same queue (or by an earlier job
    /// of the batch, see [`first_holders`](crate::first_holders)) yields that job's id, and so
    /// does a job that coalesces with an earlier one (see [`Coalesce`](crate::Coalesce)).
    ///
    /// When a queue has a `max_depth` and the batch's new jobs would take its waiting jobs
    /// (pending and scheduled) beyond it, nothing of the batch is stored and the answer is
    /// [`Error::QueueFull`], exactly so under concurrent enqueues from any number of processes.
    async fn enqueue(&self, params: EnqueueParams) -> Result<Vec<Enqueued>, Error>;

    /// Stores the job of a cron tick unless this tick (or a later one) of the schedule already was.
    async fn enqueue_cron(&self, params: CronTickParams) -> Result<Option<JobId>, Error>;

    /// Leases ready jobs: lowest priority number first, then earliest `run_at`, then FIFO. Each
    /// job's attempt count goes up by one and it gets a fresh lease token.
    async fn fetch(&self, params: FetchParams) -> Result<Vec<LeasedJob>, Error>;

    /// Marks jobs completed with their results.
    ///
    /// A completion is idempotent per lease: one presenting the token of the lease under which
    /// the job was completed (a retry after the first reply was lost, say) is accepted again
    /// and changes nothing, the first result and finish time staying. A completion under any
    /// other token is refused, so a stale holder whose job was leased again and completed by
    /// another worker is still fenced out. A backend therefore keeps the completing lease's
    /// token with a completed job, though [`read`](Backend::read) reports no lease for it.
    async fn complete(&self, params: CompleteParams) -> Result<Vec<bool>, Error>;

    /// Records failed attempts: back to pending at `retry_at`, or dead.
    async fn fail(&self, params: FailParams) -> Result<Vec<bool>, Error>;

    /// Hands jobs back to pending, their attempt not counted.
    async fn release(&self, params: ReleaseParams) -> Result<Vec<bool>, Error>;

    /// Extends live leases.
    async fn renew(&self, params: RenewParams) -> Result<Vec<bool>, Error>;

    /// Whether [`fetch`](Backend::fetch) hands out reserved leases when asked
    /// ([`FetchParams::reserve`]); such a backend also implements
    /// [`hold_places`](Backend::hold_places).
    fn reserves(&self) -> bool {
        false
    }

    /// The most jobs a worker asks one [`fetch`](Backend::fetch) for, and so the most that one
    /// adapting to fast handlers leases ahead of those running (default 256).
    ///
    /// A store whose fetch holds no other client up while it leases (PostgreSQL's row locks)
    /// may take more: a worker draining a backlog of fast jobs then waits for fewer round trips.
    /// One that leases in a single step nothing else runs beside (a Redis script) keeps it short.
    fn max_fetch(&self) -> usize {
        256
    }

    /// Counts `params.places` places of `params.worker` against `params.queue`'s concurrency
    /// limit from now on, in place of what it held before: a queue's running count is its
    /// running jobs under leases that are not reserved, plus the places every worker holds. A
    /// reserved lease stays out of the count while its job runs; the place its job took over
    /// is counted here instead, with no write per job. A worker raises its places *before* it
    /// writes the outcome of the ended job whose place it handed on, so a limit counts one of
    /// the two at every moment (both, for a moment: never neither), and lowers them once its
    /// promoted jobs end. A rescue of a worker's jobs ([`RescueTarget::Workers`]), its
    /// [`deregister`](Backend::deregister), and a [`heartbeat`](Backend::heartbeat) that finds
    /// its heartbeat expired drop its places (a live worker tells them again at each beat).
    async fn hold_places(&self, params: PlacesParams) -> Result<(), Error> {
        let _ = params;
        Err(Error::backend("this backend hands out no reserved leases"))
    }

    /// Records progress of a running job.
    async fn progress(&self, params: ProgressParams) -> Result<bool, Error>;

    /// Reads one job.
    async fn read(&self, params: ReadParams) -> Result<Option<JobRecord>, Error>;

    /// Lists the jobs matching a filter, in id order.
    async fn list(&self, params: ListParams) -> Result<Vec<JobRecord>, Error>;

    /// Retries, cancels or deletes jobs by id or by filter, a bounded batch per call.
    async fn manage(&self, params: ManageParams) -> Result<Managed, Error>;

    /// Rescues the running jobs that `params.target` names; returns their ids.
    async fn rescue(&self, params: RescueParams) -> Result<Vec<JobId>, Error>;

    /// Removes finished jobs beyond the retention policy; returns how many.
    async fn prune(&self, params: PruneParams) -> Result<u64, Error>;

    /// Counts a queue's jobs by status.
    async fn counts(&self, params: CountsParams) -> Result<QueueCounts, Error>;

    /// Names every queue that holds jobs or whose jobs were ever enqueued, sorted.
    async fn queue_names(&self, params: QueueNamesParams) -> Result<Vec<String>, Error>;

    /// Pauses a queue (its jobs stay, no worker starts them) or resumes it. The state is kept
    /// in the store, so it holds across restarts and for every worker process.
    async fn pause(&self, params: PauseParams) -> Result<(), Error>;

    /// The paused queues, sorted.
    async fn paused_queues(&self, params: PausedParams) -> Result<Vec<String>, Error>;

    /// Stores a queue's limits, replacing any it had, for every worker process (each reads
    /// them with [`flow`](Backend::flow)). `max_depth` applies to enqueues from then on.
    async fn set_limits(&self, params: SetLimitsParams) -> Result<(), Error>;

    /// Every queue that has limits or into which jobs with key limits were enqueued, sorted by
    /// queue.
    async fn flow(&self, params: FlowParams) -> Result<Vec<QueueFlow>, Error>;

    /// How many of a queue's jobs finished (completed or cancelled) at or after
    /// `params.since` and are still retained: the queue's recent throughput.
    async fn finished_since(&self, params: FinishedParams) -> Result<u64, Error>;

    /// Records a worker's heartbeat, and forgets the workers whose heartbeat expired, with
    /// their places under limits.
    async fn heartbeat(&self, params: HeartbeatParams) -> Result<(), Error>;

    /// Forgets a worker, its liveness, and the places under limits its promoted jobs held (see
    /// [`hold_places`](Backend::hold_places)).
    async fn deregister(&self, params: DeregisterParams) -> Result<(), Error>;

    /// Holds the worker's liveness: registers the worker as one whose death the store will
    /// see, and starts holding (see [`liveness`](crate::liveness())). The hold ends when the
    /// returned [`Liveness`] is dropped or the process dies; a backend that cannot tell returns
    /// [`Liveness::unsupported`].
    async fn hold_liveness(&self, params: HoldParams) -> Result<Liveness, Error>;

    /// The registered workers whose hold has ended without their deregistering: their process
    /// died (or lost its connection to the store).
    async fn gone_workers(&self, params: GoneParams) -> Result<Vec<String>, Error>;

    /// The live workers, by id.
    async fn live_workers(&self, params: WorkersParams) -> Result<Vec<WorkerInfo>, Error>;

    /// Records cron schedules.
    async fn save_schedules(&self, params: SaveSchedulesParams) -> Result<(), Error>;

    /// The recorded cron schedules, by name, each with its last stored tick.
    async fn stored_schedules(&self, params: SchedulesParams)
        -> Result<Vec<StoredSchedule>, Error>;

    /// Records job types in the catalog, each by name and version.
    async fn publish_types(&self, params: PublishTypesParams) -> Result<(), Error>;

    /// The catalog: every published version of every job type, by name then version.
    async fn job_types(&self, params: JobTypesParams) -> Result<Vec<PublishedType>, Error>;

    /// For each of `params.names`, how many of its pending, scheduled and running jobs are
    /// stored at each version, by name then version (versions without such jobs are left out).
    async fn stored_versions(
        &self,
        params: StoredVersionsParams,
    ) -> Result<Vec<StoredVersion>, Error>;

    /// A signal that fires when jobs may have become ready in one of the queues, or were
    /// delivered to the subscribing worker (see [`FetchParams::deliver`]).
    async fn subscribe(&self, params: SubscribeParams) -> Result<Wakeup, Error>;

    /// Leases no more jobs straight to `params.worker` (see [`FetchParams::deliver`]), and
    /// returns once every job already leased to it that way has reached its subscription,
    /// where the stopping worker finds them to hand back; a delivery lost on the way (the
    /// subscription's connection dropped) is rescued when its lease lapses. The default does
    /// nothing, for a backend that delivers none.
    async fn end_deliveries(&self, params: EndDeliveriesParams) -> Result<(), Error> {
        let _ = params;
        Ok(())
    }

    /// Publishes job events to their queues' subscribers in every process, over the store's
    /// own channel. Returns at once: the backend sends them in the background, coalesced, and
    /// at most once (see [`EventStream`]).
    fn publish(&self, events: Vec<JobEvent>);

    /// Whether any process subscribes to this store's job events, as last checked (a backend
    /// checks every 200 ms, or always says yes): a publisher skips building events nobody hears.
    fn events_heard(&self) -> bool;

    /// The job events of `params.queues`, published by any process from now on.
    async fn events(&self, params: EventsParams) -> Result<EventStream, Error>;

    /// The backend itself, so extensions can reach backend-specific features.
    fn as_any(&self) -> &dyn Any;
}
