//! Rescue of lapsed leases and pruning of finished jobs, on timers.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, PruneParams, RescueParams};
use crate::model::ErrorReport;

use super::config::Retention;
use super::run::Shared;

/// Jobs rescued or pruned per call, so no call holds the store for long.
const CHUNK: usize = 1_000;

/// Rescues lapsed leases every `rescue_every` and prunes `queues` every `prune_every` until `stop`.
pub(crate) async fn maintain(
    shared: Arc<Shared>,
    queues: Vec<(String, Retention)>,
    rescue_every: Duration,
    prune_every: Duration,
    stop: CancellationToken,
) {
    let mut rescue = tokio::time::interval(rescue_every);
    let mut prune = tokio::time::interval(prune_every);
    for timer in [&mut rescue, &mut prune] {
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    }
    loop {
        tokio::select! {
            biased;
            _ = stop.cancelled() => return,
            _ = rescue.tick() => rescue_lapsed(&shared).await,
            _ = prune.tick() => prune_finished(&shared, &queues, &stop).await,
        }
    }
}

async fn rescue_lapsed(shared: &Shared) {
    let params = RescueParams {
        now: shared.clock.now(),
        limit: CHUNK,
        error: ErrorReport::lease_expired(),
    };
    match shared.backend.rescue(params).await {
        Ok(ids) if !ids.is_empty() => {
            tracing::warn!(
                jobs = ids.len(),
                "rescued jobs whose worker stopped renewing its lease"
            )
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "could not rescue lapsed leases"),
    }
}

async fn prune_finished(shared: &Shared, queues: &[(String, Retention)], stop: &CancellationToken) {
    for (queue, policy) in queues {
        if policy.keep_count.is_none() && policy.keep_for.is_none() {
            continue;
        }
        let now = shared.clock.now();
        let finished_before = policy
            .keep_for
            .and_then(|age| chrono::Duration::from_std(age).ok())
            .and_then(|age| now.checked_sub_signed(age));
        loop {
            let params = PruneParams {
                queue: queue.clone(),
                keep_count: policy.keep_count,
                finished_before,
                limit: CHUNK,
                now,
            };
            match shared.backend.prune(params).await {
                Ok(n) if n as usize == CHUNK && !stop.is_cancelled() => {
                    tokio::task::yield_now().await
                }
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(error = %e, queue, "could not prune finished jobs");
                    break;
                }
            }
        }
    }
}
