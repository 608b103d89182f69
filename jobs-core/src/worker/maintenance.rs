//! Rescue of lapsed leases and of gone workers' jobs, and pruning of finished jobs, on timers,
//! and the retention policy that pruning applies.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, PruneParams, RescueTarget};
use crate::liveness::Liveness;
use crate::model::ErrorReport;

use super::gone::{GoneWatch, WATCH_EVERY};
use super::rescue::rescue;
use super::shared::Shared;

/// How many finished (completed or cancelled) jobs a queue keeps; dead jobs are kept until
/// deleted. Both limits apply when both are set.
///
/// ```
/// use std::time::Duration;
/// use jobs_core::Retention;
///
/// let policy = Retention::count(1_000).and_age(Duration::from_secs(3600));
/// assert_eq!(policy.keep_count, Some(1_000));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Keep at most this many, the newest.
    pub keep_count: Option<u64>,
    /// Keep none older than this.
    pub keep_for: Option<Duration>,
}

impl Retention {
    /// Keep the newest `n`.
    pub const fn count(n: u64) -> Self {
        Retention {
            keep_count: Some(n),
            keep_for: None,
        }
    }

    /// Keep those finished within `age`.
    pub const fn age(age: Duration) -> Self {
        Retention {
            keep_count: None,
            keep_for: Some(age),
        }
    }

    /// Keep every finished job.
    pub const fn all() -> Self {
        Retention {
            keep_count: None,
            keep_for: None,
        }
    }

    /// Adds an age limit.
    pub const fn and_age(mut self, age: Duration) -> Self {
        self.keep_for = Some(age);
        self
    }
}

impl Default for Retention {
    /// The newest 10,000 per queue, none older than 24 hours.
    fn default() -> Self {
        Retention::count(10_000).and_age(Duration::from_secs(24 * 3600))
    }
}

/// Jobs pruned per call, so no call holds the store for long.
const CHUNK: usize = 1_000;

/// Rescues lapsed leases every `rescue_every`, the jobs of gone workers as soon as they are seen
/// gone (while `liveness` stands), and prunes `queues` every `prune_every` until `stop`.
pub(crate) async fn maintain(
    shared: Arc<Shared>,
    liveness: Arc<Liveness>,
    queues: Vec<(String, Retention)>,
    rescue_every: Duration,
    prune_every: Duration,
    stop: CancellationToken,
) {
    let mut lapsed = tokio::time::interval(rescue_every);
    let mut watch = tokio::time::interval(WATCH_EVERY);
    let mut prune = tokio::time::interval(prune_every);
    for timer in [&mut lapsed, &mut watch, &mut prune] {
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    }
    let mut gone = GoneWatch::default();
    loop {
        tokio::select! {
            biased;
            _ = stop.cancelled() => return,
            _ = lapsed.tick() => rescue_lapsed(&shared).await,
            _ = watch.tick() => gone.check(&shared, &liveness).await,
            _ = prune.tick() => prune_finished(&shared, &queues, &stop).await,
        }
    }
}

async fn rescue_lapsed(shared: &Shared) {
    let rescued = rescue(shared, RescueTarget::Lapsed, ErrorReport::lease_expired()).await;
    if let Some(jobs @ 1..) = rescued {
        tracing::warn!(jobs, "rescued jobs whose worker stopped renewing its lease");
    }
}

async fn prune_finished(shared: &Shared, queues: &[(String, Retention)], stop: &CancellationToken) {
    // Every queue, even one that keeps all its finished jobs: a store may do its upkeep then
    // (PostgreSQL folds the queue's finished counts).
    for (queue, policy) in queues {
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
