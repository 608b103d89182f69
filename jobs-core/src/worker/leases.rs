//! The leases a worker holds (running and prefetched jobs), and the task that renews them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, LeaseRef, RenewParams};
use crate::clock;
use crate::context::JobContext;
use crate::model::JobId;

use super::run::Shared;

/// The jobs this worker holds, each with its context (cancelled when its lease is lost).
#[derive(Default)]
pub(crate) struct Leases {
    held: Mutex<HashMap<JobId, JobContext>>,
}

impl Leases {
    fn held(&self) -> MutexGuard<'_, HashMap<JobId, JobContext>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn insert(&self, ctx: JobContext) {
        self.held().insert(ctx.id(), ctx);
    }

    pub fn remove(&self, id: JobId) {
        self.held().remove(&id);
    }

    pub fn snapshot(&self) -> Vec<LeaseRef> {
        self.held().values().map(JobContext::lease).collect()
    }

    /// Forgets a job whose lease was refused, and tells its handler to stop.
    fn lost(&self, lease: LeaseRef) {
        let mut held = self.held();
        if held.get(&lease.id).map(JobContext::lease) == Some(lease) {
            if let Some(ctx) = held.remove(&lease.id) {
                ctx.cancel();
            }
        }
    }
}

/// Renews every held lease each third of the lease time until `stop`.
pub(crate) async fn keep_alive(shared: Arc<Shared>, lease_for: Duration, stop: CancellationToken) {
    let mut tick = tokio::time::interval(lease_for / 3);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let items = shared.leases.snapshot();
        if items.is_empty() {
            continue;
        }
        let now = shared.clock.now();
        let params = RenewParams {
            items: items.clone(),
            expires_at: clock::later(now, lease_for),
            now,
        };
        match shared.backend.renew(params).await {
            Ok(renewed) => {
                for (lease, ok) in items.into_iter().zip(renewed) {
                    if !ok {
                        tracing::warn!(job.id = %lease.id, "lease lost; stopping the job");
                        shared.leases.lost(lease);
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not renew leases; retrying"),
        }
    }
}
