//! The leases a worker holds: its running and prefetched jobs, each with its context.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crate::backend::LeaseRef;
use crate::context::{BackendContext, JobContext};
use crate::model::JobId;

/// The jobs this worker holds, each with its context (cancelled when its lease is lost).
#[derive(Default)]
pub(crate) struct Leases {
    held: Mutex<HashMap<JobId, JobContext>>,
}

impl Leases {
    fn held(&self) -> MutexGuard<'_, HashMap<JobId, JobContext>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds a fetched job.
    pub(super) fn insert(&self, ctx: JobContext) {
        self.held().insert(ctx.id(), ctx);
    }

    /// Forgets a job whose outcome was written, or given up on.
    pub(super) fn remove(&self, id: JobId) {
        self.held().remove(&id);
    }

    /// The leases held now.
    pub(super) fn snapshot(&self) -> Vec<LeaseRef> {
        self.held().values().map(BackendContext::lease).collect()
    }

    /// Forgets a job whose lease was refused, and tells its handler to stop.
    pub(super) fn lost(&self, lease: LeaseRef) {
        let mut held = self.held();
        if held.get(&lease.id).map(BackendContext::lease) == Some(lease) {
            if let Some(ctx) = held.remove(&lease.id) {
                ctx.cancel();
            }
        }
    }
}
