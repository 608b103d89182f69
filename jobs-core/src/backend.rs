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

use crate::model::{
    Enqueued, JobId, JobRecord, JobStatus, Json, LeaseToken, LeasedJob, NewJob, QueueCounts,
    Timestamp,
};
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
}

/// A job and the token of the lease under which it was fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LeaseRef {
    /// The job.
    pub id: JobId,
    /// The token its fetch handed out.
    pub token: LeaseToken,
}

impl LeasedJob {
    /// The job and its lease, as every write under the lease names them.
    pub fn lease(&self) -> LeaseRef {
        LeaseRef {
            id: self.record.id,
            token: self.token,
        }
    }
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
    /// The attempt's error, appended to the job's history.
    pub error: String,
    /// When to run again; `None` sends the job to dead.
    pub retry_at: Option<Timestamp>,
}

/// Records failed attempts.
#[derive(Clone, Debug)]
pub struct FailParams {
    /// The failures.
    pub items: Vec<Failure>,
    /// The current time.
    pub now: Timestamp,
}

/// Hands leased jobs back without spending an attempt (graceful shutdown).
#[derive(Clone, Debug)]
pub struct ReleaseParams {
    /// The jobs and their leases.
    pub items: Vec<LeaseRef>,
    /// The current time.
    pub now: Timestamp,
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
}

/// Lists jobs, oldest first, a page at a time.
#[derive(Clone, Debug, Default)]
pub struct ListParams {
    /// Only this queue.
    pub queue: Option<String>,
    /// Only this status.
    pub status: Option<JobStatus>,
    /// Only jobs after this id (the last id of the previous page).
    pub after: Option<JobId>,
    /// At most this many.
    pub limit: usize,
}

/// Puts a dead or cancelled job back to pending with fresh attempts.
#[derive(Clone, Copy, Debug)]
pub struct RetryParams {
    /// The job.
    pub id: JobId,
    /// The current time: the job's new `run_at`.
    pub now: Timestamp,
}

/// Removes a job for good.
#[derive(Clone, Copy, Debug)]
pub struct DeleteParams {
    /// The job.
    pub id: JobId,
}

/// Cancels a job that is scheduled, pending or running (a running job's lease is revoked).
#[derive(Clone, Copy, Debug)]
pub struct CancelParams {
    /// The job.
    pub id: JobId,
    /// The current time.
    pub now: Timestamp,
}

/// Rescues running jobs whose lease lapsed: back to pending, or dead when out of attempts.
#[derive(Clone, Copy, Debug)]
pub struct RescueParams {
    /// The current time.
    pub now: Timestamp,
    /// At most this many per call.
    pub limit: usize,
}

/// Removes finished jobs that the retention policy no longer keeps.
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
}

/// Counts a queue's jobs by status.
#[derive(Clone, Debug)]
pub struct CountsParams {
    /// The queue.
    pub queue: String,
}

/// A job store. Every backend implements all of it and passes the conformance suite
/// (`jobs_core::testing`, feature `testing`).
///
/// Per-item results (`Vec<bool>`) say which writes were accepted: a write whose lease token no
/// longer matches a running job is refused and changes nothing.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Stores jobs; a unique key held by an active job of the same queue yields that job's id.
    async fn enqueue(&self, params: EnqueueParams) -> Result<Vec<Enqueued>, Error>;

    /// Stores the job of a cron tick unless this tick (or a later one) of the schedule already was.
    async fn enqueue_cron(&self, params: CronTickParams) -> Result<Option<JobId>, Error>;

    /// Leases ready jobs: lowest priority number first, then earliest `run_at`, then FIFO. Each
    /// job's attempt count goes up by one and it gets a fresh lease token.
    async fn fetch(&self, params: FetchParams) -> Result<Vec<LeasedJob>, Error>;

    /// Marks jobs completed with their results.
    async fn complete(&self, params: CompleteParams) -> Result<Vec<bool>, Error>;

    /// Records failed attempts: back to pending at `retry_at`, or dead.
    async fn fail(&self, params: FailParams) -> Result<Vec<bool>, Error>;

    /// Hands jobs back to pending, their attempt not counted.
    async fn release(&self, params: ReleaseParams) -> Result<Vec<bool>, Error>;

    /// Extends live leases.
    async fn renew(&self, params: RenewParams) -> Result<Vec<bool>, Error>;

    /// Records progress of a running job.
    async fn progress(&self, params: ProgressParams) -> Result<bool, Error>;

    /// Reads one job.
    async fn job(&self, id: JobId) -> Result<Option<JobRecord>, Error>;

    /// Lists jobs by queue and status, oldest first.
    async fn list(&self, params: ListParams) -> Result<Vec<JobRecord>, Error>;

    /// Puts a dead or cancelled job back to pending with fresh attempts; false if it is neither.
    async fn retry(&self, params: RetryParams) -> Result<bool, Error>;

    /// Deletes a job; false if it did not exist.
    async fn delete(&self, params: DeleteParams) -> Result<bool, Error>;

    /// Cancels an active job; false if it had already finished or does not exist.
    async fn cancel(&self, params: CancelParams) -> Result<bool, Error>;

    /// Rescues jobs whose lease lapsed; returns their ids.
    async fn rescue(&self, params: RescueParams) -> Result<Vec<JobId>, Error>;

    /// Removes finished jobs beyond the retention policy; returns how many.
    async fn prune(&self, params: PruneParams) -> Result<u64, Error>;

    /// Counts a queue's jobs by status.
    async fn counts(&self, params: CountsParams) -> Result<QueueCounts, Error>;

    /// A signal that fires when jobs may have become ready in one of `queues`.
    async fn subscribe(&self, queues: &[String]) -> Result<Wakeup, Error>;

    /// The backend itself, so extensions can reach backend-specific features.
    fn as_any(&self) -> &dyn Any;
}
