//! The job model shared by every backend: ids, statuses and the stored record.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::backoff::Backoff;
pub(crate) use crate::clock::Timestamp;
use crate::error::ErrorKind;
pub(crate) use crate::error::ErrorReport;
use crate::flow::{Coalesce, KeyLimits};
pub(crate) use crate::ids::{JobId, LeaseToken};
pub(crate) use crate::status::JobStatus;
use crate::workflow::step::Step;

/// A JSON document kept as its text: payloads and results are never re-encoded on the hot path.
pub type Json = Box<RawValue>;

/// The error of one failed attempt, kept in the job's history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptError {
    /// The attempt that failed, from 1.
    pub attempt: u32,
    /// When the failure was recorded.
    pub at: Timestamp,
    /// What kind of failure it was (the kind of errors stored before kinds were kept reads as
    /// retryable).
    #[serde(default)]
    pub kind: ErrorKind,
    /// The error as it displays itself, with the messages of its sources that it does not
    /// already show, joined by `: `.
    pub message: String,
    /// The messages of the error's sources, outermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<String>,
}

impl AttemptError {
    /// The stored form of `report`, failed in `attempt` at `at`.
    pub fn new(attempt: u32, at: Timestamp, report: ErrorReport) -> Self {
        AttemptError {
            attempt,
            at,
            kind: report.kind,
            message: report.message,
            chain: report.chain,
        }
    }
}

/// Why a dead job is dead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadReason {
    /// Its last failure could not be retried (a fatal error, a payload that does not decode).
    Fatal,
    /// Every attempt failed.
    OutOfAttempts,
}

/// A worker's hold on a running job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The worker holding it.
    pub worker: Arc<str>,
    /// The token every write must present.
    pub token: LeaseToken,
    /// When it lapses unless renewed.
    pub expires_at: Timestamp,
}

/// A job to store: what `enqueue` hands to a backend.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NewJob {
    /// Made by the client, so a batch needs no round trip to learn its ids.
    pub id: JobId,
    /// The stable stored name of the job type.
    pub name: String,
    /// The queue it waits in.
    pub queue: String,
    /// The arguments, as JSON.
    pub payload: Json,
    /// The payload's version (the job type's `#[job(version)]`, 1 by default).
    #[serde(default = "first_version")]
    pub version: u32,
    /// Lower runs first.
    pub priority: i16,
    /// Not run before this time.
    pub run_at: Timestamp,
    /// How many attempts before the job is dead.
    pub max_attempts: u32,
    /// The delay before each retry.
    pub backoff: Backoff,
    /// How long one attempt may run.
    #[serde(with = "crate::serde_millis::option")]
    pub timeout: Option<Duration>,
    /// While a job with this key (in this queue) is active, enqueueing another returns it.
    pub unique_key: Option<String>,
    /// The caller's trace context (e.g. a W3C `traceparent`), carried into the job's span.
    pub trace_context: Option<String>,
    /// Labels to find the job by (`"order:42"`), in the order given, without repeats.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Limits shared with the queue's other jobs of the same key.
    #[serde(default)]
    pub key_limits: Option<KeyLimits>,
    /// How the enqueue coalesces with an earlier job of the same key (throttle, debounce).
    #[serde(default)]
    pub coalesce: Option<Coalesce>,
    /// Its part in a workflow: stored `waiting` while it has slots to fill, and what its end
    /// does to the other steps (see [`Step`]).
    #[serde(default)]
    pub step: Option<Box<Step>>,
}

/// The version of a payload stored without one: every job stored before versions existed.
pub const fn first_version() -> u32 {
    1
}

impl NewJob {
    /// The status the job is stored with: `waiting` for a workflow step with inputs to come,
    /// `scheduled` when its `run_at` is later than `now`, else `pending`.
    pub fn initial_status(&self, now: Timestamp) -> JobStatus {
        if self.step.as_ref().is_some_and(|s| s.slots > 0) {
            JobStatus::Waiting
        } else if self.run_at > now {
            JobStatus::Scheduled
        } else {
            JobStatus::Pending
        }
    }
}

/// For each job of a batch, the index of the earlier job of the same batch that holds its
/// unique key in its queue, if any: such a job is a duplicate of that one and is stored once.
pub fn first_holders(jobs: &[NewJob]) -> Vec<Option<usize>> {
    let mut holders: std::collections::HashMap<(&str, &str), usize> =
        std::collections::HashMap::new();
    jobs.iter()
        .enumerate()
        .map(|(i, job)| {
            let key = job.unique_key.as_deref()?;
            let first = *holders.entry((job.queue.as_str(), key)).or_insert(i);
            (first != i).then_some(first)
        })
        .collect()
}

/// What a backend answers for each job it was asked to enqueue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enqueued {
    /// The stored job's id: the new job's, or the existing one's for a duplicate unique key.
    pub id: JobId,
    /// True when a unique key matched an active job and nothing new was stored.
    pub duplicate: bool,
}

/// A job as stored, readable by id from any process.
///
/// Its name and queue (and its lease's worker) are `Arc<str>`: the copies a worker makes of a
/// leased record, and the events made of it, share them instead of allocating each again. Read
/// them as `&str` (`&*record.queue`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobRecord {
    /// Its id.
    pub id: JobId,
    /// The stable stored name of the job type.
    pub name: Arc<str>,
    /// The queue it waits in.
    pub queue: Arc<str>,
    /// The arguments, as JSON.
    pub payload: Json,
    /// The payload's version.
    #[serde(default = "first_version")]
    pub version: u32,
    /// Lower runs first.
    pub priority: i16,
    /// Not run before this time.
    pub run_at: Timestamp,
    /// Where the job is in its life.
    pub status: JobStatus,
    /// Attempts started so far (the running one included).
    pub attempt: u32,
    /// Attempts allowed before the job is dead.
    pub max_attempts: u32,
    /// The delay before each retry.
    pub backoff: Backoff,
    /// How long one attempt may run.
    #[serde(with = "crate::serde_millis::option")]
    pub timeout: Option<Duration>,
    /// The worker's hold while running.
    pub lease: Option<Lease>,
    /// Progress in percent, as the handler last reported it.
    pub progress: u8,
    /// The handler's result, once completed.
    pub result: Option<Json>,
    /// The error of each failed attempt, oldest first.
    pub errors: Vec<AttemptError>,
    /// The dedup key, if any.
    pub unique_key: Option<String>,
    /// The caller's trace context.
    pub trace_context: Option<String>,
    /// Labels to find the job by.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Limits shared with the queue's other jobs of the same key.
    #[serde(default)]
    pub key_limits: Option<KeyLimits>,
    /// Its part in a workflow.
    #[serde(default)]
    pub step: Option<Box<Step>>,
    /// The values delivered to its slots so far, by slot (a waiting workflow step).
    #[serde(default)]
    pub inputs: BTreeMap<u32, Json>,
    /// When it was enqueued.
    pub created_at: Timestamp,
    /// When its latest attempt started.
    pub started_at: Option<Timestamp>,
    /// When it reached an end state.
    pub finished_at: Option<Timestamp>,
}

impl JobRecord {
    /// The record a freshly enqueued job starts as.
    pub fn new(job: NewJob, now: Timestamp) -> Self {
        let status = job.initial_status(now);
        JobRecord {
            id: job.id,
            name: job.name.into(),
            queue: job.queue.into(),
            payload: job.payload,
            version: job.version,
            priority: job.priority,
            run_at: job.run_at,
            status,
            attempt: 0,
            max_attempts: job.max_attempts,
            backoff: job.backoff,
            timeout: job.timeout,
            lease: None,
            progress: 0,
            result: None,
            errors: Vec::new(),
            unique_key: job.unique_key,
            trace_context: job.trace_context,
            tags: job.tags,
            key_limits: job.key_limits,
            step: job.step,
            inputs: BTreeMap::new(),
            created_at: now,
            started_at: None,
            finished_at: None,
        }
    }

    /// Whether the job is a workflow step whose inputs have not all arrived: it may not run,
    /// and a retry by hand puts it back to waiting.
    pub fn awaits_inputs(&self) -> bool {
        self.step
            .as_ref()
            .is_some_and(|s| (self.inputs.len() as u64) < u64::from(s.slots))
    }

    /// The error of the latest failed attempt.
    pub fn last_error(&self) -> Option<&AttemptError> {
        self.errors.last()
    }

    /// Why the job is dead; `None` unless it is.
    pub fn dead_reason(&self) -> Option<DeadReason> {
        if self.status != JobStatus::Dead {
            return None;
        }
        let retryable = self.last_error().is_none_or(|e| e.kind.is_retryable());
        Some(if retryable && self.attempt >= self.max_attempts {
            DeadReason::OutOfAttempts
        } else {
            DeadReason::Fatal
        })
    }
}

/// A job handed to a worker by `fetch`, with the lease that every later write must present.
#[derive(Clone, Debug)]
pub struct LeasedJob {
    /// The job as it is now stored (status running, attempt counted).
    pub record: JobRecord,
    /// The token of this lease.
    pub token: LeaseToken,
    /// Leased beyond its queue's concurrency limit (see
    /// [`FetchParams::reserve`](crate::FetchParams::reserve)): no limit counts it. The worker
    /// starts it only in the place of an ended job, which its worker's places then count (see
    /// [`Backend::hold_places`](crate::Backend::hold_places)).
    pub reserved: bool,
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

/// A job and the token of the lease under which it was fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LeaseRef {
    /// The job.
    pub id: JobId,
    /// The token its fetch handed out.
    pub token: LeaseToken,
}

/// How many jobs of a queue are in each status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueCounts {
    /// Workflow steps waiting for the steps before them.
    #[serde(default)]
    pub waiting: u64,
    /// Waiting for a future `run_at` (delayed at enqueue).
    pub scheduled: u64,
    /// Ready or waiting for a retry.
    pub pending: u64,
    /// Leased by a worker.
    pub running: u64,
    /// Finished and retained.
    pub completed: u64,
    /// In the dead-letter set.
    pub dead: u64,
    /// Cancelled and retained.
    pub cancelled: u64,
}

impl QueueCounts {
    /// The count for one status.
    pub fn get(&self, status: JobStatus) -> u64 {
        match status {
            JobStatus::Waiting => self.waiting,
            JobStatus::Scheduled => self.scheduled,
            JobStatus::Pending => self.pending,
            JobStatus::Running => self.running,
            JobStatus::Completed => self.completed,
            JobStatus::Dead => self.dead,
            JobStatus::Cancelled => self.cancelled,
        }
    }

    /// The count for one status, to change.
    pub fn get_mut(&mut self, status: JobStatus) -> &mut u64 {
        match status {
            JobStatus::Waiting => &mut self.waiting,
            JobStatus::Scheduled => &mut self.scheduled,
            JobStatus::Pending => &mut self.pending,
            JobStatus::Running => &mut self.running,
            JobStatus::Completed => &mut self.completed,
            JobStatus::Dead => &mut self.dead,
            JobStatus::Cancelled => &mut self.cancelled,
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    fn job(queue: &str, key: Option<&str>) -> NewJob {
        NewJob {
            id: JobId::new(),
            name: "n".into(),
            queue: queue.into(),
            payload: serde_json::value::to_raw_value(&()).unwrap(),
            version: 1,
            priority: 0,
            run_at: Utc::now(),
            max_attempts: 1,
            backoff: Backoff::default(),
            timeout: None,
            unique_key: key.map(str::to_string),
            trace_context: None,
            tags: Vec::new(),
            key_limits: None,
            coalesce: None,
            step: None,
        }
    }

    #[test]
    fn first_holders_point_at_the_first_job_of_a_key_in_its_queue() {
        let batch = [
            job("q", Some("a")),
            job("q", None),
            job("q", Some("a")),
            job("r", Some("a")),
            job("q", Some("a")),
        ];
        assert_eq!(
            first_holders(&batch),
            vec![None, None, Some(0), None, Some(0)]
        );
    }

    #[test]
    fn a_stored_error_without_a_kind_reads_as_retryable() {
        let old: AttemptError =
            serde_json::from_str(r#"{"attempt":2,"message":"boom","at":"2026-01-01T00:00:00Z"}"#)
                .unwrap();
        assert_eq!(old.kind, ErrorKind::Retryable);
        assert!(old.chain.is_empty());
    }
}
