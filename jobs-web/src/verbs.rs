//! The actions, what each is called and what it does through `Operations`: on one job (retry,
//! cancel, delete), on every job matching a filter (retry all, delete all) and on a queue
//! (pause, resume). The form routes (`actions`), the JSON API (`api`) and the pages apply and
//! show the same ones.

use jobs_core::{AnyBackend, Error, JobFilter, JobId, JobStatus, Operations};

use crate::count::{count, count_retryable, Count};

/// An action on one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobAction {
    /// Back to pending (a dead or cancelled job).
    Retry,
    /// Cancelled (a scheduled, pending or running job).
    Cancel,
    /// Gone for good.
    Delete,
}

impl JobAction {
    /// Every action, for the routes.
    pub(crate) const ALL: [JobAction; 3] = [JobAction::Retry, JobAction::Cancel, JobAction::Delete];

    /// Its name in paths and ids (`retry`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            JobAction::Retry => "retry",
            JobAction::Cancel => "cancel",
            JobAction::Delete => "delete",
        }
    }

    /// Whether it applies to a job in `status`.
    pub(crate) fn allowed(self, status: JobStatus) -> bool {
        match self {
            JobAction::Retry => matches!(status, JobStatus::Dead | JobStatus::Cancelled),
            JobAction::Cancel => status.is_active(),
            JobAction::Delete => true,
        }
    }

    /// Applies it to job `id`.
    pub(crate) async fn apply(self, backend: &AnyBackend, id: JobId) -> Result<(), Error> {
        match self {
            JobAction::Retry => backend.retry(id).await,
            JobAction::Cancel => backend.cancel(id).await,
            JobAction::Delete => backend.delete(id).await,
        }
    }

    pub(crate) fn done(self) -> &'static str {
        match self {
            JobAction::Retry => "Retried",
            JobAction::Cancel => "Cancelled",
            JobAction::Delete => "Deleted",
        }
    }
}

/// An action on every job matching a filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BulkAction {
    /// Retries the matching dead and cancelled jobs.
    RetryAll,
    /// Deletes the matching jobs.
    DeleteAll,
}

impl BulkAction {
    /// Both, for the routes.
    pub(crate) const ALL: [BulkAction; 2] = [BulkAction::RetryAll, BulkAction::DeleteAll];

    /// Its name in paths (`retry-all`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            BulkAction::RetryAll => "retry-all",
            BulkAction::DeleteAll => "delete-all",
        }
    }

    /// Its verb for a person (`Retry`).
    pub(crate) fn verb(self) -> &'static str {
        match self {
            BulkAction::RetryAll => "Retry",
            BulkAction::DeleteAll => "Delete",
        }
    }

    /// How many jobs it would change now (capped, see [`count`]).
    pub(crate) async fn count(
        self,
        backend: &AnyBackend,
        filter: &JobFilter,
    ) -> Result<Count, Error> {
        match self {
            BulkAction::RetryAll => count_retryable(backend, filter).await,
            BulkAction::DeleteAll => count(backend, filter).await,
        }
    }

    /// Applies it to the whole filter, in the store; returns how many jobs changed.
    pub(crate) async fn apply(
        self,
        backend: &AnyBackend,
        filter: &JobFilter,
    ) -> Result<u64, Error> {
        match self {
            BulkAction::RetryAll => backend.retry_all(filter).await,
            BulkAction::DeleteAll => backend.delete_all(filter).await,
        }
    }

    pub(crate) fn done(self) -> &'static str {
        match self {
            BulkAction::RetryAll => "Retried",
            BulkAction::DeleteAll => "Deleted",
        }
    }
}

/// Pausing or resuming a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QueueAction {
    /// Workers take none of its jobs.
    Pause,
    /// Workers take its jobs again.
    Resume,
}

impl QueueAction {
    /// Both, for the routes.
    pub(crate) const ALL: [QueueAction; 2] = [QueueAction::Pause, QueueAction::Resume];

    /// Its name in paths and classes (`pause`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            QueueAction::Pause => "pause",
            QueueAction::Resume => "resume",
        }
    }

    /// Applies it to `queue`.
    pub(crate) async fn apply(self, backend: &AnyBackend, queue: &str) -> Result<(), Error> {
        match self {
            QueueAction::Pause => backend.pause_queue(queue).await,
            QueueAction::Resume => backend.resume_queue(queue).await,
        }
    }
}
