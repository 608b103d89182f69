//! Runs one leased job: waits for a run slot, runs the handler in its own task (so a panic is
//! a failed attempt, not a dead worker), enforces the timeout, and records the outcome.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit};
use tracing::Instrument;

use crate::backend::{Backend, Completion, FailParams, Failure, ReleaseParams};
use crate::backoff::random_unit;
use crate::clock;
use crate::context::JobContext;
use crate::model::{JobRecord, Json, LeasedJob};
use crate::JobError;

use super::events::{call, JobEvent};
use super::gate::RunPermit;
use super::reporter::{with_retries, Done};
use super::run::Shared;

/// How an attempt ended.
enum Outcome {
    Completed(Json),
    Failed(JobError),
    /// Shutdown's grace ran out, or the job never started: hand it back, attempt not spent.
    Interrupted,
    /// The lease was lost: another worker may hold the job now, so write nothing.
    Abandoned,
}

/// Runs one leased job to its recorded outcome. `slot` is held until the end.
pub(crate) async fn execute(
    shared: Arc<Shared>,
    job: LeasedJob,
    ctx: JobContext,
    slot: OwnedSemaphorePermit,
    turn: oneshot::Receiver<RunPermit>,
    done: mpsc::UnboundedSender<Done>,
) {
    let record = job.record;
    let span = tracing::info_span!(
        "job",
        job.id = %record.id,
        job.name = %record.name,
        job.queue = %record.queue,
        job.attempt = record.attempt,
        trace_context = record.trace_context.as_deref(),
    );
    async move {
        let outcome = run_handler(&shared, &record, &ctx, turn).await;
        record_outcome(&shared, &record, &ctx, outcome, done).await;
        drop(slot);
    }
    .instrument(span)
    .await
}

async fn run_handler(
    shared: &Shared,
    record: &JobRecord,
    ctx: &JobContext,
    turn: oneshot::Receiver<RunPermit>,
) -> Outcome {
    let _running = tokio::select! {
        biased;
        _ = shared.stopping.cancelled() => return Outcome::Interrupted,
        permit = turn => match permit {
            Ok(permit) => permit,
            Err(_) => return Outcome::Interrupted,
        },
    };
    let Some(job_type) = shared.types.get(&record.name) else {
        return Outcome::Failed(JobError::retryable(format!(
            "no handler for job `{}` is registered in this worker",
            record.name
        )));
    };
    let started = std::time::Instant::now();
    let handler = job_type.run(&record.payload, ctx.clone(), shared.state.clone());
    let mut task = tokio::spawn(handler.in_current_span());
    let deadline = async {
        match record.timeout {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    let outcome = tokio::select! {
        biased;
        _ = shared.hard_stop.cancelled() => Err(Outcome::Interrupted),
        _ = ctx.cancelled() => Err(Outcome::Abandoned),
        _ = deadline => Err(Outcome::Failed(JobError::retryable(format!(
            "timed out after {}",
            humantime::format_duration(record.timeout.unwrap_or_default())
        )))),
        joined = &mut task => Ok(joined),
    };
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "handler finished"
    );
    match outcome {
        Ok(Ok(Ok(result))) => Outcome::Completed(result),
        Ok(Ok(Err(error))) => Outcome::Failed(error),
        Ok(Err(join_error)) => Outcome::Failed(JobError::retryable(panic_message(join_error))),
        Err(other) => {
            ctx.cancel();
            task.abort();
            other
        }
    }
}

fn panic_message(error: tokio::task::JoinError) -> String {
    match error.try_into_panic() {
        Ok(payload) => {
            let text = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string payload".to_string());
            format!("handler panicked: {text}")
        }
        Err(error) => format!("handler task failed: {error}"),
    }
}

async fn record_outcome(
    shared: &Shared,
    record: &JobRecord,
    ctx: &JobContext,
    outcome: Outcome,
    done: mpsc::UnboundedSender<Done>,
) {
    let lease = ctx.lease();
    let event = JobEvent::of(record);
    match outcome {
        Outcome::Completed(result) => {
            let completion = Completion { lease, result };
            match ctx.take_completion_hook() {
                Some(hook) => {
                    match hook.complete(completion, shared.clock.now()).await {
                        Ok(true) => call(&shared.hooks.completed, &event),
                        Ok(false) => tracing::warn!("completion refused: the lease was lost"),
                        Err(e) => tracing::error!(error = %e, "could not record completion"),
                    }
                    shared.leases.remove(record.id);
                }
                None => {
                    if let Err(unsent) = done.send(Done { completion, event }) {
                        tracing::error!(job.id = %unsent.0.event.id, "completion reporter stopped");
                        shared.leases.remove(record.id);
                    }
                }
            }
        }
        Outcome::Failed(error) => {
            fail(shared, record, ctx, error, event).await;
            shared.leases.remove(record.id);
        }
        Outcome::Interrupted => {
            let params = || ReleaseParams {
                items: vec![lease],
                now: shared.clock.now(),
            };
            if let Err(e) = with_retries(|| shared.backend.release(params())).await {
                tracing::warn!(error = %e, "could not hand the job back; its lease will lapse");
            }
            shared.leases.remove(record.id);
        }
        Outcome::Abandoned => tracing::warn!("job stopped: its lease was lost or it was cancelled"),
    }
}

async fn fail(
    shared: &Shared,
    record: &JobRecord,
    ctx: &JobContext,
    error: JobError,
    mut event: JobEvent,
) {
    let now = shared.clock.now();
    let message = error.message();
    let retry_at = (error.is_retryable() && record.attempt < record.max_attempts).then(|| {
        let delay: Duration = record.backoff.delay(record.attempt, random_unit());
        clock::add(now, delay)
    });
    let params = || FailParams {
        items: vec![Failure {
            lease: ctx.lease(),
            error: message.clone(),
            retry_at,
        }],
        now,
    };
    match with_retries(|| shared.backend.fail(params())).await {
        Ok(accepted) if accepted.first() == Some(&true) => {
            match retry_at {
                Some(at) => {
                    tracing::warn!(error = %message, retry_at = %at, "attempt failed; will retry");
                    shared.retry_due(at);
                }
                None => tracing::error!(error = %message, "job is dead"),
            }
            event.error = Some(message);
            event.retry_at = retry_at;
            call(&shared.hooks.failed, &event);
            if retry_at.is_none() {
                call(&shared.hooks.dead, &event);
            }
        }
        Ok(_) => tracing::warn!("failure refused: the lease was lost"),
        Err(e) => tracing::error!(error = %e, "could not record the failure; its lease will lapse"),
    }
}
