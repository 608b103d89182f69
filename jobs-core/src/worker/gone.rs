//! Rescue of a dead worker's jobs in under a second: each worker watches for workers whose
//! liveness hold has ended (see [`liveness`](crate::liveness())) and rescues their jobs at once,
//! without waiting for their leases to lapse.
//!
//! Two rules keep a live worker's jobs from being taken: a worker must be seen gone for
//! [`CONFIRM`] (a connection broken and made again within it is a blip, not a death), and a
//! worker judges others only once its own hold has stood for [`SETTLED`] (after a server
//! restart every hold broke, and the workers take theirs again one by one).

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use crate::backend::{Backend, DeregisterParams, GoneParams, RescueTarget};
use crate::liveness::Liveness;
use crate::model::ErrorReport;

use super::rescue::rescue;
use super::shared::Shared;

/// How often a worker looks for gone workers.
pub(crate) const WATCH_EVERY: Duration = Duration::from_millis(200);
/// How long a worker must be seen gone before its jobs are rescued.
const CONFIRM: Duration = Duration::from_millis(300);
/// How long this worker's own hold must have stood before it judges others.
const SETTLED: Duration = Duration::from_secs(2);

/// The workers seen gone, and since when.
#[derive(Default)]
pub(crate) struct GoneWatch {
    suspects: HashMap<String, Instant>,
}

impl GoneWatch {
    /// Looks once: rescues the jobs of the workers gone for [`CONFIRM`], then forgets them.
    pub(crate) async fn check(&mut self, shared: &Shared, own: &Liveness) {
        if own.held_for().is_none_or(|held| held < SETTLED) {
            self.suspects.clear();
            return;
        }
        let gone = match shared.backend.gone_workers(GoneParams {}).await {
            Ok(gone) => gone,
            Err(e) => {
                tracing::warn!(error = %e, "could not look for gone workers");
                return;
            }
        };
        let now = Instant::now();
        self.suspects.retain(|worker, _| gone.contains(worker));
        let dead: Vec<String> = gone
            .into_iter()
            .filter(|worker| {
                let since = *self.suspects.entry(worker.clone()).or_insert(now);
                now.duration_since(since) >= CONFIRM
            })
            .collect();
        if dead.is_empty() {
            return;
        }
        let target = RescueTarget::Workers(dead.clone());
        let Some(rescued) = rescue(shared, target, ErrorReport::worker_gone()).await else {
            return;
        };
        if rescued > 0 {
            tracing::warn!(
                jobs = rescued,
                workers = ?dead,
                "rescued the jobs of workers whose process is gone"
            );
        }
        for worker in dead {
            self.suspects.remove(&worker);
            if let Err(e) = shared.backend.deregister(DeregisterParams { worker }).await {
                tracing::warn!(error = %e, "could not forget a gone worker");
            }
        }
    }
}
