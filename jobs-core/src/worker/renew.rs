//! The task that keeps the worker's leases alive: renews every held lease each third of the
//! lease time, and stops the jobs whose lease was refused.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, RenewParams};
use crate::clock;

use super::shared::Shared;

/// Renews every held lease each third of `lease_for` until `stop`.
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
                    if ok {
                        continue;
                    }
                    if shared.leases.lost(lease) {
                        tracing::warn!(job.id = %lease.id, "lease lost; stopping the job");
                    } else {
                        tracing::debug!(job.id = %lease.id, "renewal refused while the outcome is written");
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not renew leases; retrying"),
        }
    }
}
