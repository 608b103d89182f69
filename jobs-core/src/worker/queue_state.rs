//! What the store says about the worker's queues: which are paused and what flow limits each
//! has. The worker reads both before its first fetch and then every [`STATE_CHECK`], so that a
//! pause or a new limit reaches every worker process within a second; it fetches only from the
//! open queues, passing their limits to the fetch. Jobs already running finish.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, FlowParams, PausedParams};
use crate::flow::QueueFlow;

use super::shared::Shared;

/// How often a worker reads its queues' state.
pub(crate) const STATE_CHECK: Duration = Duration::from_millis(500);

/// How soon a worker fetches again from a queue with flow limits after a fetch found nothing:
/// its jobs may be held back by a limit that another process's finished job or the rate's
/// sliding window frees at any moment, and no wake-up says so. Each further empty fetch waits
/// twice as long, up to [`FLOW_RETRY_MAX`], so an idle limited queue is not polled hard; its
/// own jobs' ending attempts and new jobs wake the worker at once.
pub(crate) const FLOW_RETRY: Duration = Duration::from_millis(20);

/// The longest wait between two fetches from a queue with flow limits.
pub(crate) const FLOW_RETRY_MAX: Duration = Duration::from_millis(200);

/// The queues' state as last read.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct QueueState {
    /// The paused queues.
    pub(crate) paused: BTreeSet<String>,
    /// The queues with flow limits or keyed jobs.
    pub(crate) flow: Vec<QueueFlow>,
}

impl QueueState {
    /// The flow a fetch from `queues` enforces.
    pub(crate) fn flow_of(&self, queues: &[String]) -> Vec<QueueFlow> {
        self.flow
            .iter()
            .filter(|f| queues.contains(&f.queue))
            .cloned()
            .collect()
    }
}

/// The queues' state, kept current.
pub(crate) type QueueStates = watch::Receiver<QueueState>;

/// Reads the queues' state once (none paused and no limits, should the store fail: they are
/// seen at the next check), then keeps it current every [`STATE_CHECK`] until `stop`.
pub(crate) async fn watch_queue_state(
    shared: &Arc<Shared>,
    stop: CancellationToken,
) -> QueueStates {
    let (tx, rx) = watch::channel(read(shared).await.unwrap_or_default());
    let shared = shared.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(STATE_CHECK);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        every.tick().await;
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = every.tick() => {}
            }
            if let Some(state) = read(&shared).await {
                tx.send_if_modified(|current| {
                    let changed = *current != state;
                    *current = state;
                    changed
                });
            }
        }
    });
    rx
}

async fn read(shared: &Shared) -> Option<QueueState> {
    let paused = shared.backend.paused_queues(PausedParams {});
    let flow = shared.backend.flow(FlowParams {});
    match tokio::join!(paused, flow) {
        (Ok(paused), Ok(flow)) => Some(QueueState {
            paused: paused.into_iter().collect(),
            flow,
        }),
        (Err(e), _) | (_, Err(e)) => {
            tracing::warn!(error = %e, "could not read the queues' paused state and limits");
            None
        }
    }
}
