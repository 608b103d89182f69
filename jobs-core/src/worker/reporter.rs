//! Records outcomes in batches: one backend call for all the completions, and one for all the
//! failures, that came in meanwhile.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::backend::{Backend, CompleteParams, Completion, FailParams, Failure};
use crate::Error;

use super::events::{call, JobEvent};
use super::run::Shared;

/// The most outcomes written in one call.
const BATCH: usize = 512;

/// A finished attempt waiting to be recorded.
pub(crate) enum Done {
    /// The handler succeeded.
    Completed(Completion, JobEvent),
    /// The handler failed; the event carries the error and the retry time.
    Failed(Failure, JobEvent),
}

impl Done {
    /// The outcome's job and attempt.
    pub(crate) fn event(&self) -> &JobEvent {
        match self {
            Done::Completed(_, event) | Done::Failed(_, event) => event,
        }
    }
}

/// Writes outcomes until every sender is gone.
pub(crate) async fn flush_loop(shared: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<Done>) {
    let mut batch = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        // Let the handlers that are finishing too send their outcomes, so they join this write.
        tokio::task::yield_now().await;
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(done) => batch.push(done),
                Err(_) => break,
            }
        }
        let (mut completions, mut completed) = (Vec::new(), Vec::new());
        let (mut failures, mut failed) = (Vec::new(), Vec::new());
        for done in batch.drain(..) {
            match done {
                Done::Completed(completion, event) => {
                    completions.push(completion);
                    completed.push(event);
                }
                Done::Failed(failure, event) => {
                    failures.push(failure);
                    failed.push(event);
                }
            }
        }
        record_completions(&shared, completions, completed).await;
        record_failures(&shared, failures, failed).await;
    }
}

async fn record_completions(shared: &Shared, items: Vec<Completion>, events: Vec<JobEvent>) {
    if items.is_empty() {
        return;
    }
    let written = with_retries(|| {
        shared.backend.complete(CompleteParams {
            items: items.clone(),
            now: shared.clock.now(),
        })
    })
    .await;
    settle(shared, &events, written, |shared, event| {
        call(&shared.hooks.completed, event)
    });
}

async fn record_failures(shared: &Shared, items: Vec<Failure>, events: Vec<JobEvent>) {
    if items.is_empty() {
        return;
    }
    let written = with_retries(|| {
        shared.backend.fail(FailParams {
            items: items.clone(),
            now: shared.clock.now(),
        })
    })
    .await;
    settle(shared, &events, written, |shared, event| {
        let error = event.error.as_deref().unwrap_or_default();
        match event.retry_at {
            Some(at) => {
                tracing::warn!(job.id = %event.id, error, retry_at = %at, "attempt failed; will retry");
                shared.retry_due(at);
            }
            None => tracing::error!(job.id = %event.id, error, "job is dead"),
        }
        call(&shared.hooks.failed, event);
        if event.retry_at.is_none() {
            call(&shared.hooks.dead, event);
        }
    });
}

/// Forgets the written jobs' leases and tells the hooks about each accepted write.
fn settle(
    shared: &Shared,
    events: &[JobEvent],
    written: Result<Vec<bool>, Error>,
    accepted: impl Fn(&Shared, &JobEvent),
) {
    match written {
        Ok(flags) => {
            for (event, ok) in events.iter().zip(flags) {
                shared.leases.remove(event.id);
                if ok {
                    accepted(shared, event);
                } else {
                    tracing::warn!(job.id = %event.id, "write refused: the lease was lost");
                }
            }
        }
        Err(e) => {
            // The leases lapse and the jobs run again: at least once, never lost.
            tracing::error!(error = %e, jobs = events.len(), "could not record outcomes");
            for event in events {
                shared.leases.remove(event.id);
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
