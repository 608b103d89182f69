//! What the worker's hooks are told about each outcome.

use std::sync::Arc;

use crate::model::{JobId, JobRecord, Timestamp};

/// An outcome of one attempt, given to the hooks `on_completed`, `on_failed` and `on_dead`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobEvent {
    /// The job.
    pub id: JobId,
    /// Its stored name.
    pub name: String,
    /// Its queue.
    pub queue: String,
    /// The attempt, from 1.
    pub attempt: u32,
    /// The attempt's error, for failures.
    pub error: Option<String>,
    /// When the job runs again, for a failure that will be retried.
    pub retry_at: Option<Timestamp>,
}

impl JobEvent {
    pub(crate) fn of(record: &JobRecord) -> Self {
        JobEvent {
            id: record.id,
            name: record.name.clone(),
            queue: record.queue.clone(),
            attempt: record.attempt,
            error: None,
            retry_at: None,
        }
    }
}

pub(crate) type Hook = Arc<dyn Fn(&JobEvent) + Send + Sync>;

/// The hooks a worker calls.
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    pub completed: Vec<Hook>,
    pub failed: Vec<Hook>,
    pub dead: Vec<Hook>,
}

pub(crate) fn call(hooks: &[Hook], event: &JobEvent) {
    for hook in hooks {
        hook(event);
    }
}
