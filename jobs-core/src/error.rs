//! Errors: `Error` for the library's own operations, `JobError` for what a handler returns.

use std::fmt;

/// A boxed error from a backend's driver or a user's handler.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What went wrong in an operation of `jobs` itself (connecting, enqueueing, reading, running).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The backend could not be reached or refused the connection.
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
    /// A configuration or argument is not valid: a bad URL, a bad schema name, a bad duration.
    #[error("{0}")]
    Invalid(String),
    /// A payload or result does not (de)serialize.
    #[error("serialization failed: {0}")]
    Serde(#[from] serde_json::Error),
    /// The job does not exist (any more).
    #[error("job {0} not found")]
    NotFound(crate::JobId),
    /// The job ended without a result: it is dead or cancelled.
    #[error("job {id} ended {status} without a result{}", last_error.as_deref().map(|e| format!(": {e}")).unwrap_or_default())]
    JobEnded {
        /// The job.
        id: crate::JobId,
        /// Its end status.
        status: crate::JobStatus,
        /// The error of its last failed attempt.
        last_error: Option<String>,
    },
    /// The lease was lost (it lapsed and the job went to another worker, or it was cancelled):
    /// the write was refused.
    #[error("lease on job {0} was lost; the write was refused")]
    LeaseLost(crate::JobId),
    /// The worker could not start: missing state, duplicate job names, a bad cron schedule.
    #[error("worker cannot start: {0}")]
    Worker(String),
}

impl Error {
    /// Wraps a driver error as a backend error.
    pub fn backend(e: impl Into<BoxError>) -> Self {
        Error::Backend(e.into())
    }
}

/// Whether a failed attempt may be retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Retried after the job's backoff until its attempts run out.
    Retryable,
    /// Goes straight to the dead-letter set.
    Fatal,
}

/// The error a job handler returns: retryable (the default) or fatal, with its source.
///
/// Any `std::error::Error` converts with `?` into a retryable `JobError`.
///
/// ```
/// use jobs_core::JobError;
///
/// fn parse(n: &str) -> Result<u32, JobError> {
///     let n: u32 = n.parse()?; // retryable
///     if n == 0 {
///         return Err(JobError::fatal("zero is never valid")); // straight to dead
///     }
///     Ok(n)
/// }
/// assert!(parse("x").unwrap_err().is_retryable());
/// assert!(!parse("0").unwrap_err().is_retryable());
/// ```
pub struct JobError {
    kind: ErrorKind,
    source: BoxError,
}

impl JobError {
    /// A failure worth retrying.
    pub fn retryable(e: impl Into<BoxError>) -> Self {
        JobError {
            kind: ErrorKind::Retryable,
            source: e.into(),
        }
    }

    /// A failure that no retry can fix: the job goes straight to dead.
    pub fn fatal(e: impl Into<BoxError>) -> Self {
        JobError {
            kind: ErrorKind::Fatal,
            source: e.into(),
        }
    }

    /// Whether the job may be retried.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// True unless fatal.
    pub fn is_retryable(&self) -> bool {
        self.kind == ErrorKind::Retryable
    }

    /// The underlying error.
    pub fn source(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.source
    }

    /// The error and its chain of sources, joined by `: `.
    pub fn message(&self) -> String {
        let mut text = self.source.to_string();
        let mut next = self.source.source();
        while let Some(cause) = next {
            let cause_text = cause.to_string();
            // Errors that already print their source (as thiserror's `{0}`) are not repeated.
            if !text.ends_with(&cause_text) {
                text.push_str(": ");
                text.push_str(&cause_text);
            }
            next = cause.source();
        }
        text
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
            .field("source", &self.source)
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
        assert!(job_err.is_retryable());
    }

    #[test]
    fn fatal_from_a_string() {
        let e = JobError::fatal("card declined");
        assert_eq!(e.kind(), ErrorKind::Fatal);
        assert_eq!(e.to_string(), "card declined");
    }
}
