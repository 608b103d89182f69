//! Records completions in batches: one backend call for all the jobs that finished meanwhile.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::backend::{Backend, CompleteParams, Completion};
use crate::Error;

use super::events::{call, JobEvent};
use super::run::Shared;

/// The most completions written in one call.
const BATCH: usize = 512;

/// A finished job waiting to be recorded.
pub(crate) struct Done {
    pub completion: Completion,
    pub event: JobEvent,
}

/// Writes completions until every sender is gone.
pub(crate) async fn flush_loop(shared: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<Done>) {
    let mut batch = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        let items: Vec<Completion> = batch.iter().map(|d| d.completion.clone()).collect();
        let written = with_retries(|| {
            shared.backend.complete(CompleteParams {
                items: items.clone(),
                now: shared.clock.now(),
            })
        })
        .await;
        match written {
            Ok(accepted) => {
                for (done, ok) in batch.drain(..).zip(accepted) {
                    shared.leases.remove(done.event.id);
                    if ok {
                        call(&shared.hooks.completed, &done.event);
                    } else {
                        tracing::warn!(job.id = %done.event.id, "completion refused: the lease was lost");
                    }
                }
            }
            Err(e) => {
                // The leases lapse and the jobs run again: at least once, never lost.
                tracing::error!(error = %e, jobs = batch.len(), "could not record completions");
                for done in batch.drain(..) {
                    shared.leases.remove(done.event.id);
                }
            }
        }
    }
}

/// Runs a backend write up to three times, pausing 50 ms then 250 ms between tries.
pub(crate) async fn with_retries<T, F, Fut>(mut write: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    let mut pauses = [Duration::from_millis(50), Duration::from_millis(250)].into_iter();
    loop {
        match write().await {
            Ok(value) => return Ok(value),
            Err(e) => match pauses.next() {
                Some(pause) => {
                    tracing::debug!(error = %e, "backend write failed; retrying");
                    tokio::time::sleep(pause).await;
                }
                None => return Err(e),
            },
        }
    }
}
