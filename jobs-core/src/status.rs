//! `JobStatus`: where a job is in its life.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a job is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// A workflow step waiting for the steps before it (see [`workflow`](crate::workflow)).
    Waiting,
    /// Waiting for its `run_at`, set in the future at enqueue.
    Scheduled,
    /// Ready to run once `run_at` has passed (also after a retry).
    Pending,
    /// Leased by a worker.
    Running,
    /// Finished with a result.
    Completed,
    /// Attempts exhausted or a fatal error: kept until retried or deleted.
    Dead,
    /// Cancelled by a person or a program.
    Cancelled,
}

impl JobStatus {
    /// Every status, in life order.
    pub const ALL: [JobStatus; 7] = [
        JobStatus::Waiting,
        JobStatus::Scheduled,
        JobStatus::Pending,
        JobStatus::Running,
        JobStatus::Completed,
        JobStatus::Dead,
        JobStatus::Cancelled,
    ];

    /// The lowercase name stored by backends.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Waiting => "waiting",
            JobStatus::Scheduled => "scheduled",
            JobStatus::Pending => "pending",
            JobStatus::Running => "running",
            JobStatus::Completed => "completed",
            JobStatus::Dead => "dead",
            JobStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the job still waits or runs (the states in which a unique key is held).
    pub fn is_active(self) -> bool {
        matches!(
            self,
            JobStatus::Waiting | JobStatus::Scheduled | JobStatus::Pending | JobStatus::Running
        )
    }

    /// Whether the job reached an end state.
    pub fn is_finished(self) -> bool {
        !self.is_active()
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for JobStatus {
    type Err = UnknownStatus;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JobStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_string()))
    }
}

/// A status name that is none of [`JobStatus::ALL`]'s.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown job status `{0}`: expected one of waiting, scheduled, pending, running, completed, dead, cancelled")]
pub struct UnknownStatus(pub String);
