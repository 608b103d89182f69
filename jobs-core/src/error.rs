//! Errors: `Error` for the library's own operations, `JobError` for what a handler returns.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ids::JobId;
use crate::status::{JobStatus, UnknownStatus};
use crate::workflow::step::WorkflowId;

/// A boxed error from a backend's driver or a user's handler.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What went wrong in an operation of `jobs` itself (connecting, enqueueing, reading, running).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The backend could not be reached: refused, timed out, or the server went away.
    #[error("cannot connect to {target}: {source}")]
    Connect {
        /// What was being connected to (the URL with any password hidden).
        target: String,
        /// The driver's error.
        #[source]
        source: BoxError,
    },
    /// The storage failed while doing an operation.
    #[error("backend error: {0}")]
    Backend(#[source] BoxError),
    /// A configuration or argument is not valid: a bad URL or URL option, a bad schema name, a
    /// bad duration.
    #[error("{0}")]
    Invalid(String),
    /// A payload or result does not (de)serialize.
    #[error("serialization failed: {0}")]
    Serde(#[from] serde_json::Error),
    /// The job does not exist (any more).
    #[error("job {0} not found")]
    NotFound(JobId),
    /// No step of the workflow is stored (any more).
    #[error("workflow {0} not found")]
    WorkflowNotFound(WorkflowId),
    /// A retry was refused: another active job of the queue holds the job's unique key.
    #[error("cannot retry job {job}: its unique key `{key}` is held by active job {holder}")]
    UniqueKeyHeld {
        /// The job that was to be retried.
        job: JobId,
        /// Its unique key.
        key: String,
        /// The active job that holds the key.
        holder: JobId,
    },
    /// The job is not in a status the operation applies to (say, retrying a running job).
    #[error("job {id} is {status}: cannot {action} it")]
    WrongStatus {
        /// The job.
        id: JobId,
        /// Its status.
        status: JobStatus,
        /// What was asked (`retry`, `cancel`).
        action: &'static str,
    },
    /// The job ended without a result: it is dead or cancelled.
    #[error("job {id} ended {status} without a result{}", last_error.as_deref().map(|e| format!(": {e}")).unwrap_or_default())]
    JobEnded {
        /// The job.
        id: JobId,
        /// Its end status.
        status: JobStatus,
        /// The error of its last failed attempt.
        last_error: Option<String>,
    },
    /// The lease was lost (it lapsed and the job went to another worker, or it was cancelled):
    /// the write was refused.
    #[error("lease on job {0} was lost; the write was refused")]
    LeaseLost(JobId),
    /// The queue holds as many waiting jobs as its `max_depth` allows: nothing of the enqueue
    /// was stored (a service answers 429 or 503; or waits for room with
    /// [`Enqueue::enqueue_within`](crate::Enqueue::enqueue_within)).
    #[error("queue `{queue}` is full: it holds its maximum of {max_depth} waiting jobs")]
    QueueFull {
        /// The queue.
        queue: String,
        /// Its maximum depth.
        max_depth: u64,
    },
    /// No worker has published a job type of this name to the catalog.
    #[error("no job type `{0}` is published: a worker that runs it publishes it when it starts")]
    UnknownJobType(String),
    /// A JSON payload does not match its job type's published schema: nothing was stored.
    #[error("payload does not match the schema of job `{name}` (version {version}): {}", problems.join("; "))]
    InvalidPayload {
        /// The job type.
        name: String,
        /// The version whose schema it was checked against.
        version: u32,
        /// Every way it does not match.
        problems: Vec<String>,
    },
    /// The worker could not start; every problem found is listed.
    #[error("worker cannot start: {}", StartProblem::join(.0))]
    Start(Vec<StartProblem>),
}

impl Error {
    /// Wraps a driver error as a backend error.
    pub fn backend(e: impl Into<BoxError>) -> Self {
        Error::Backend(e.into())
    }

    /// What went wrong, without the "backend error: " of a backend error.
    pub fn detail(&self) -> String {
        match self {
            Error::Backend(source) => source.to_string(),
            other => other.to_string(),
        }
    }
}

/// A failed attempt's error as the worker reports it: its kind, message and source chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorReport {
    /// What kind of failure it was.
    pub kind: ErrorKind,
    /// The error with the messages of its sources, joined by `: `.
    pub message: String,
    /// The messages of the error's sources, outermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<String>,
}

impl ErrorReport {
    /// A report of `kind` with `message` and no sources.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ErrorReport {
            kind,
            message: message.into(),
            chain: Vec::new(),
        }
    }

    /// The report of a rescue: the lease lapsed because its worker stopped renewing it.
    pub fn lease_expired() -> Self {
        ErrorReport::new(
            ErrorKind::LeaseLost,
            "lease expired: the worker stopped renewing it (it crashed, was killed or stalled)",
        )
    }

    /// The report of a rescue: the worker's process is gone (its hold on the store ended).
    pub fn worker_gone() -> Self {
        ErrorReport::new(
            ErrorKind::LeaseLost,
            "worker gone: its process died or lost its connection to the store",
        )
    }
}

impl From<UnknownStatus> for Error {
    fn from(e: UnknownStatus) -> Self {
        Error::Invalid(e.to_string())
    }
}

/// One reason a worker refused to start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartProblem {
    /// A job of the worker's queues takes a `State<T>` the worker was not given.
    #[error(
        "job `{job}` takes `State<{type_name}>` but the worker has none (add it with `.state(..)`)"
    )]
    MissingState {
        /// The job's stored name.
        job: String,
        /// The state's type.
        type_name: String,
    },
    /// Two job types are stored under one name.
    #[error("two jobs are stored under the name `{name}`: `{first}` and `{second}`; give one a different `name = \"...\"`")]
    DuplicateName {
        /// The stored name.
        name: String,
        /// One type's path.
        first: String,
        /// The other's.
        second: String,
    },
    /// A periodic job's schedule does not parse.
    #[error("job `{job}`: {reason}")]
    BadSchedule {
        /// The job's stored name.
        job: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Jobs are stored at a payload version that no chain of upgrades leads up from.
    #[error("job `{job}`: {jobs} waiting or running jobs are stored at version {stored}, and no upgrade leads from version {missing} (register `#[job_upgrade(from = {missing})]`; this build's version is {current})")]
    NoUpgradePath {
        /// The job's stored name.
        job: String,
        /// The stored version.
        stored: u32,
        /// How many jobs are stored at it.
        jobs: u64,
        /// The first version without an upgrade.
        missing: u32,
        /// This build's version.
        current: u32,
    },
    /// No queue was named and no job is registered.
    #[error("no queues to run: no job is registered and none were named with `.queues(..)`")]
    NoQueues,
}

impl StartProblem {
    fn join(problems: &[StartProblem]) -> String {
        let texts: Vec<String> = problems.iter().map(ToString::to_string).collect();
        texts.join("; ")
    }
}

/// What kind of failure an attempt ended in, stored with its error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The handler failed; retried after the job's backoff until its attempts run out.
    #[default]
    Retryable,
    /// The handler said no retry can help: straight to the dead-letter set.
    Fatal,
    /// The attempt ran past the job's timeout.
    Timeout,
    /// The handler panicked.
    Panic,
    /// The worker's lease lapsed (it crashed, was killed or stalled) and the job was rescued.
    LeaseLost,
    /// The stored payload does not deserialize as the job's type.
    Decode,
}

impl ErrorKind {
    /// Whether an attempt that failed so may be retried.
    pub fn is_retryable(self) -> bool {
        !matches!(self, ErrorKind::Fatal | ErrorKind::Decode)
    }

    /// The stored name (`"lease_lost"`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Retryable => "retryable",
            ErrorKind::Fatal => "fatal",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Panic => "panic",
            ErrorKind::LeaseLost => "lease_lost",
            ErrorKind::Decode => "decode",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a handler asks of the worker when it returns a [`JobError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Retry after the job's backoff (or dead, when out of attempts or not retryable).
    Backoff,
    /// Retry after this delay instead of the backoff (a `Retry-After`).
    RetryIn(Duration),
    /// Run again after this delay without spending an attempt.
    Snooze(Duration),
}

/// The error a job handler returns: retryable (the default) or fatal, with its source; or a
/// request to be retried at a chosen time, or snoozed.
///
/// Any `std::error::Error` converts with `?` into a retryable `JobError`.
///
/// ```
/// use std::time::Duration;
/// use jobs_core::JobError;
///
/// fn parse(n: &str) -> Result<u32, JobError> {
///     let n: u32 = n.parse()?; // retryable
///     if n == 0 {
///         return Err(JobError::fatal("zero is never valid")); // straight to dead
///     }
///     if n == 429 {
///         // Retried in 30 s rather than after the backoff (it still spends the attempt).
///         return Err(JobError::retry_in(Duration::from_secs(30), "rate limited"));
///     }
///     if n == 503 {
///         // Run again in a minute; the attempt is not counted.
///         return Err(JobError::snooze(Duration::from_secs(60)));
///     }
///     Ok(n)
/// }
/// assert!(parse("x").unwrap_err().is_retryable());
/// assert!(!parse("0").unwrap_err().is_retryable());
/// ```
pub struct JobError {
    kind: ErrorKind,
    next: Next,
    inner: BoxError,
}

impl JobError {
    /// A failure worth retrying.
    pub fn retryable(e: impl Into<BoxError>) -> Self {
        Self::of_kind(ErrorKind::Retryable, e)
    }

    /// A failure that no retry can fix: the job goes straight to dead.
    pub fn fatal(e: impl Into<BoxError>) -> Self {
        Self::of_kind(ErrorKind::Fatal, e)
    }

    /// A retryable failure to be retried after `delay` instead of the job's backoff (say, a
    /// server's `Retry-After`). It spends the attempt: out of attempts, the job is dead.
    pub fn retry_in(delay: Duration, e: impl Into<BoxError>) -> Self {
        JobError {
            next: Next::RetryIn(delay),
            ..Self::retryable(e)
        }
    }

    /// Not a failure: run the job again after `delay`, its attempt not counted and no error
    /// recorded.
    pub fn snooze(delay: Duration) -> Self {
        JobError {
            next: Next::Snooze(delay),
            ..Self::retryable(format!("snoozed for {}", humantime::format_duration(delay)))
        }
    }

    /// A failure of `kind`, as the worker records timeouts, panics and decode errors.
    pub(crate) fn of_kind(kind: ErrorKind, e: impl Into<BoxError>) -> Self {
        JobError {
            kind,
            next: Next::Backoff,
            inner: e.into(),
        }
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// True unless fatal.
    pub fn is_retryable(&self) -> bool {
        self.kind.is_retryable()
    }

    /// What the handler asked for.
    pub(crate) fn next(&self) -> Next {
        self.next
    }

    /// The underlying error.
    pub fn inner(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.inner
    }

    /// The messages of the underlying error's sources, outermost first.
    pub fn chain(&self) -> Vec<String> {
        let mut chain = Vec::new();
        let mut next = self.inner.source();
        while let Some(cause) = next {
            chain.push(cause.to_string());
            next = cause.source();
        }
        chain
    }

    /// The error and its chain of sources, joined by `: `.
    pub fn message(&self) -> String {
        let mut text = self.inner.to_string();
        for cause in self.chain() {
            // Errors that already print their source (as thiserror's `{0}`) are not repeated.
            if !text.ends_with(&cause) {
                text.push_str(": ");
                text.push_str(&cause);
            }
        }
        text
    }

    /// The error as it is stored in the job's history.
    pub fn report(&self) -> ErrorReport {
        ErrorReport {
            kind: self.kind,
            message: self.message(),
            chain: self.chain(),
        }
    }
}

impl<E: Into<BoxError>> From<E> for JobError {
    fn from(e: E) -> Self {
        JobError::retryable(e)
    }
}

impl fmt::Debug for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobError")
            .field("kind", &self.kind)
            .field("next", &self.next)
            .field("inner", &self.inner)
            .finish()
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_includes_the_source_chain() {
        let io = std::io::Error::other("disk on fire");
        let err = Error::Backend(Box::new(io));
        let job_err = JobError::from(err);
        assert_eq!(job_err.message(), "backend error: disk on fire");
        assert_eq!(job_err.chain(), vec!["disk on fire".to_string()]);
        assert!(job_err.is_retryable());
        let report = job_err.report();
        assert_eq!(report.kind, ErrorKind::Retryable);
        assert_eq!(report.chain, vec!["disk on fire".to_string()]);
    }

    #[test]
    fn fatal_from_a_string() {
        let e = JobError::fatal("card declined");
        assert_eq!(e.kind(), ErrorKind::Fatal);
        assert_eq!(e.to_string(), "card declined");
    }

    #[test]
    fn retry_in_and_snooze_say_what_comes_next() {
        let d = Duration::from_secs(7);
        assert_eq!(JobError::retry_in(d, "429").next(), Next::RetryIn(d));
        assert_eq!(JobError::snooze(d).next(), Next::Snooze(d));
        assert_eq!(JobError::fatal("x").next(), Next::Backoff);
    }

    #[test]
    fn start_problems_are_listed_together() {
        let e = Error::Start(vec![
            StartProblem::NoQueues,
            StartProblem::BadSchedule {
                job: "tick".into(),
                reason: "bad cron".into(),
            },
        ]);
        assert_eq!(
            e.to_string(),
            "worker cannot start: no queues to run: no job is registered and none were named \
             with `.queues(..)`; job `tick`: bad cron"
        );
    }

    #[test]
    fn kinds_are_stored_by_their_snake_case_names() {
        for kind in [ErrorKind::LeaseLost, ErrorKind::Decode] {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
    }
}
