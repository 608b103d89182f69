//! The names the records read together share, each allocated once: a fetch's batch holds one
//! queue and one or a few job names, where each record allocated both.

use std::sync::Arc;

/// The names the records read together share: their queue's, and the job names met so far,
/// each allocated once rather than once per record (a fetch's batch holds one or a few names).
pub(crate) struct Names {
    queue: Arc<str>,
    jobs: Vec<Arc<str>>,
}

impl Names {
    /// Job names kept: a batch of more distinct names allocates the others per record, so no
    /// look-up scans a long list.
    pub(crate) const KEPT: usize = 8;

    /// The names of records of `queue`.
    pub(crate) fn new(queue: &str) -> Self {
        Names {
            queue: queue.into(),
            jobs: Vec::new(),
        }
    }

    /// The queue's name.
    pub(crate) fn queue(&self) -> Arc<str> {
        self.queue.clone()
    }

    /// The job name `name`, shared with the records before that bore it.
    pub(crate) fn job(&mut self, name: &str) -> Arc<str> {
        if let Some(kept) = self.jobs.iter().find(|kept| ***kept == *name) {
            return kept.clone();
        }
        let name: Arc<str> = name.into();
        if self.jobs.len() < Self::KEPT {
            self.jobs.push(name.clone());
        }
        name
    }
}
