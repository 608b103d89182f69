//! Runs one leased job: waits for its turn, runs the handler (a panic is a failed attempt, not
//! a dead worker), enforces the timeout, and records the outcome.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit};
use tracing::Instrument;

use crate::backend::{Backend, Completion, Failure, LeaseRef, Release, ReleaseParams};
use crate::backoff::random_unit;
use crate::clock;
use crate::context::JobContext;
use crate::model::{JobRecord, Json, LeasedJob};
use crate::error::{ErrorKind, Next};
use crate::JobError;

use super::events::{call, JobEvent};
use super::gate::RunPermit;
use super::reporter::{with_retries, Done};
use super::run::Shared;
use super::unwind::{panic_message, CatchUnwind};

/// How an attempt ended.
enum Outcome {
    Completed(Json),
    Failed(JobError),
    /// Shutdown's grace ran out, or the job never started: hand it back, attempt not spent.
    Interrupted,
    /// The handler asked to run again after a while, its attempt not spent.
    Snoozed(Duration),
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
        return Outcome::Failed(JobError::of_kind(
            ErrorKind::UnknownName,
            format!(
                "no handler for job `{}` is registered in this worker",
                record.name
            ),
        ));
    };
    let handler = job_type.run(&record.payload, ctx.clone(), shared.state.clone());
    let deadline = async {
        match record.timeout {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    // Dropping the handler's future on any other branch stops it.
    let outcome = tokio::select! {
        biased;
        _ = shared.hard_stop.cancelled() => Outcome::Interrupted,
        _ = ctx.cancelled() => Outcome::Abandoned,
        _ = deadline => Outcome::Failed(JobError::of_kind(ErrorKind::Timeout, format!(
            "timed out after {}",
            humantime::format_duration(record.timeout.unwrap_or_default())
        ))),
        finished = CatchUnwind(handler) => match finished {
            Ok(Ok(result)) => Outcome::Completed(result),
            Ok(Err(error)) => match error.next() {
                Next::Snooze(delay) => Outcome::Snoozed(delay),
                _ => Outcome::Failed(error),
            },
            Err(panic) => Outcome::Failed(JobError::of_kind(ErrorKind::Panic, panic_message(&*panic))),
        },
    };
    if matches!(outcome, Outcome::Interrupted | Outcome::Abandoned) {
        ctx.cancel();
    }
    outcome
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
                None => report(shared, &done, Done::Completed(completion, event)),
            }
        }
        Outcome::Failed(error) => {
            let failed = failure(shared, record, lease, error, event);
            report(shared, &done, failed);
        }
        Outcome::Interrupted | Outcome::Snoozed(_) => {
            let now = shared.clock.now();
            let run_at = match outcome {
                Outcome::Snoozed(delay) => Some(clock::later(now, delay)),
                _ => None,
            };
            if let Some(at) = run_at {
                shared.retry_due(at);
            }
            let params = || ReleaseParams {
                items: vec![Release { lease, run_at }],
                now,
            };
            if let Err(e) = with_retries(|| shared.backend.release(params())).await {
                tracing::warn!(error = %e, "could not hand the job back; its lease will lapse");
            }
            shared.leases.remove(record.id);
        }
        Outcome::Abandoned => tracing::warn!("job stopped: its lease was lost or it was cancelled"),
    }
}

/// Hands an outcome to the batching reporter.
fn report(shared: &Shared, done: &mpsc::UnboundedSender<Done>, outcome: Done) {
    if let Err(unsent) = done.send(outcome) {
        let id = unsent.0.event().id;
        tracing::error!(job.id = %id, "outcome reporter stopped; the lease will lapse");
        shared.leases.remove(id);
    }
}

/// The failure to record: retried after the job's backoff, or dead when fatal or out of
/// attempts.
fn failure(
    shared: &Shared,
    record: &JobRecord,
    lease: LeaseRef,
    error: JobError,
    mut event: JobEvent,
) -> Done {
    let now = shared.clock.now();
    let report = error.report();
    let retry_at = (error.is_retryable() && record.attempt < record.max_attempts).then(|| {
        let delay: Duration = match error.next() {
            Next::RetryIn(delay) => delay,
            _ => record.backoff.delay(record.attempt, random_unit()),
        };
        clock::later(now, delay)
    });
    event.error = Some(report.message.clone());
    event.retry_at = retry_at;
    let failure = Failure {
        lease,
        error: report,
        retry_at,
    };
    Done::Failed(failure, event)
}
