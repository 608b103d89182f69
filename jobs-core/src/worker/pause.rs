//! Paused queues: the worker reads which of its queues are paused before its first fetch and
//! then every [`PAUSE_CHECK`], and fetches only from the others, so that a pause reaches every
//! worker process within a second; jobs already running finish.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, PausedParams};

use super::shared::Shared;

/// How often a worker reads which queues are paused.
pub(crate) const PAUSE_CHECK: Duration = Duration::from_millis(500);

/// The paused queues, as last read.
pub(crate) type Paused = watch::Receiver<BTreeSet<String>>;

/// Reads the paused queues once (none, should the store fail: a pause is seen at the next
/// check), then keeps them current every [`PAUSE_CHECK`] until `stop`.
pub(crate) async fn watch_paused(shared: &Arc<Shared>, stop: CancellationToken) -> Paused {
    let (tx, rx) = watch::channel(read(shared).await.unwrap_or_default());
    let shared = shared.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(PAUSE_CHECK);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        every.tick().await;
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = every.tick() => {}
            }
            if let Some(paused) = read(&shared).await {
                tx.send_if_modified(|current| {
                    let changed = *current != paused;
                    *current = paused;
                    changed
                });
            }
        }
    });
    rx
}

async fn read(shared: &Shared) -> Option<BTreeSet<String>> {
    match shared.backend.paused_queues(PausedParams {}).await {
        Ok(paused) => Some(paused.into_iter().collect()),
        Err(e) => {
            tracing::warn!(error = %e, "could not read the paused queues");
            None
        }
    }
}
