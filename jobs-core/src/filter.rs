//! `JobFilter`: which jobs a list or a bulk operation applies to.

use serde::{Deserialize, Serialize};

use crate::model::{JobRecord, JobStatus, Timestamp};

/// Which jobs to list, retry, cancel or delete: every field that is set must match.
///
/// ```
/// use jobs_core::{JobFilter, JobStatus};
///
/// let dead_of_order_42 = JobFilter::new().status(JobStatus::Dead).tag("order:42");
/// assert_eq!(dead_of_order_42.tag.as_deref(), Some("order:42"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JobFilter {
    /// Only jobs of this queue.
    pub queue: Option<String>,
    /// Only jobs in this status.
    pub status: Option<JobStatus>,
    /// Only jobs of this stored name.
    pub name: Option<String>,
    /// Only jobs carrying this tag.
    pub tag: Option<String>,
    /// Only jobs enqueued at or after this time.
    pub created_after: Option<Timestamp>,
    /// Only jobs enqueued before this time.
    pub created_before: Option<Timestamp>,
    /// Only finished jobs that finished before this time.
    pub finished_before: Option<Timestamp>,
}

impl JobFilter {
    /// Every job.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only jobs of `queue`.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// Only jobs in `status`.
    pub fn status(mut self, status: JobStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// Only jobs of the stored name `name`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Only jobs tagged `tag`.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tag = Some(tag.into());
        self
    }

    /// Only jobs enqueued at or after `at`.
    pub fn created_after(mut self, at: Timestamp) -> Self {
        self.created_after = Some(at);
        self
    }

    /// Only jobs enqueued before `at`.
    pub fn created_before(mut self, at: Timestamp) -> Self {
        self.created_before = Some(at);
        self
    }

    /// Only jobs that finished before `at`.
    pub fn finished_before(mut self, at: Timestamp) -> Self {
        self.finished_before = Some(at);
        self
    }

    /// Whether `job` matches: the rule every backend's query implements.
    pub fn matches(&self, job: &JobRecord) -> bool {
        self.queue.as_ref().is_none_or(|q| *job.queue == **q)
            && self.status.is_none_or(|s| job.status == s)
            && self.name.as_ref().is_none_or(|n| *job.name == **n)
            && self.tag.as_ref().is_none_or(|t| job.tags.contains(t))
            && self.created_after.is_none_or(|at| job.created_at >= at)
            && self.created_before.is_none_or(|at| job.created_at < at)
            && self
                .finished_before
                .is_none_or(|at| job.finished_at.is_some_and(|f| f < at))
    }
}
