//! Runs one leased job: waits for its turn (a reserved job first for a place handed on by an
//! ended one), runs the handler (a panic is a failed attempt, not a dead worker), enforces the
//! timeout, hands its place under its queue's limit on to a reserved job waiting for one, and
//! hands what the attempt ended in to the sink.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, OwnedSemaphorePermit};
use tracing::Instrument;

use crate::context::JobContext;
use crate::error::{ErrorKind, Next};
use crate::model::JobRecord;
use crate::workflow::payload_of;
use crate::JobError;

use super::gate::{RunGate, RunPermit};
use super::handoff::{Hand, Handed};
use super::outcome::{Outcome, Sink};
use super::shared::Shared;
use super::unwind::{panic_message, CatchUnwind};

/// How long a job of a name this worker does not run is handed back for.
const UNKNOWN_NAME_BACKOFF: Duration = Duration::from_secs(1);

/// How a leased job gets its turn to run.
pub(crate) enum Start {
    /// Its turn from the run gate, which admitted it.
    Turn(oneshot::Receiver<RunPermit>),
    /// A reserved job: once an ended job hands it its place, its turn from this gate.
    Reserved(Handed, Arc<RunGate>),
}

/// Runs one leased job to its recorded outcome. `slot` (none for a delivered job) is held until
/// the end, or until the handler is done and its place waits for a fetch's reserved jobs.
///
/// Not an `async fn`: the future of one would keep its arguments beside the running state that
/// takes them over, and a task's future is allocated per job.
pub(crate) fn execute(
    shared: Arc<Shared>,
    ctx: JobContext,
    mut slot: Option<OwnedSemaphorePermit>,
    start: Start,
    sink: Sink,
) -> impl Future<Output = ()> + Send {
    let record = ctx.record();
    // Named and attributed for OpenTelemetry's messaging conventions (see `crate::otel`).
    let span = tracing::info_span!(
        "job",
        otel.name = %format_args!("process {}", record.queue),
        otel.kind = "consumer",
        messaging.system = "jobs",
        messaging.operation.type = "process",
        messaging.destination.name = %record.queue,
        messaging.message.id = %record.id,
        job.id = %record.id,
        job.name = %record.name,
        job.queue = %record.queue,
        job.attempt = record.attempt,
        trace_context = record.trace_context.as_deref(),
    );
    #[cfg(feature = "otel")]
    if let Some(traceparent) = &record.trace_context {
        crate::otel::restore(&span, traceparent, record.attempt);
    }
    async move {
        let record = ctx.record();
        let outcome = run_handler(&shared, record, &ctx, start).await;
        let hand = if hands_on(&outcome, &ctx) {
            shared
                .handoffs
                .hand(&record.queue, record.id, &shared.leases)
        } else {
            Hand::Nowhere
        };
        let handed = match hand {
            Hand::Handed => true,
            // Its handler is done: its slot goes to the next fetch while it waits for this one.
            // Shutdown drops the fetch under way, whose answer then never comes.
            Hand::Later(answer) => {
                drop(slot.take());
                tokio::select! {
                    answer = answer => answer.unwrap_or(false),
                    _ = shared.stopping.cancelled() => false,
                }
            }
            Hand::Nowhere => false,
        };
        if !handed {
            shared.leases.finishing(record.id);
            shared.handoffs.trim(&record.queue, &shared.leases);
        }
        sink.record(&ctx, outcome).await;
        drop(slot);
    }
    .instrument(span)
}

/// Whether an attempt that ended in `outcome` hands its place on: when the sink writes its
/// outcome (not a completion hook, whose commit must land before the place is free) and it
/// ran (not handed back at shutdown, nor stopped for a lost lease).
fn hands_on(outcome: &Outcome, ctx: &JobContext) -> bool {
    match outcome {
        Outcome::Completed(_) => !ctx.has_completion_hook(),
        Outcome::Failed(_) | Outcome::Snoozed(_) => true,
        Outcome::Interrupted | Outcome::Abandoned => false,
    }
}

/// Waits for the job's turn: its permit, or the outcome that ends it unstarted.
async fn turn(
    shared: &Shared,
    record: &JobRecord,
    ctx: &JobContext,
    start: Start,
) -> Result<RunPermit, Outcome> {
    let mut turn = match start {
        Start::Turn(turn) => turn,
        Start::Reserved(mut handed, gate) => {
            // Most often handed its place already (by a job that ended while it was fetched):
            // no need to wait for it.
            let now = if ctx.is_cancelled() {
                None
            } else {
                ready(shared, &mut handed)
            };
            let handed = match now {
                Some(handed) => handed.unwrap_or(false),
                None => tokio::select! {
                    biased;
                    _ = shared.stopping.cancelled() => false,
                    _ = ctx.cancelled() => return Err(Outcome::Abandoned),
                    handed = handed => handed.unwrap_or(false),
                },
            };
            if !handed {
                return Err(Outcome::Interrupted);
            }
            gate.admit([record]).pop().expect("one admitted")
        }
    };
    if let Some(permit) = ready(shared, &mut turn) {
        return permit.map_err(|_| Outcome::Interrupted);
    }
    tokio::select! {
        biased;
        _ = shared.stopping.cancelled() => Err(Outcome::Interrupted),
        permit = turn => permit.map_err(|_| Outcome::Interrupted),
    }
}

/// What `rx` holds already, unless the worker is stopping: what the `select!`s above would
/// take at once, without registering with the shared stop signal (a lock each way).
fn ready<T>(shared: &Shared, rx: &mut oneshot::Receiver<T>) -> Option<Result<T, ()>> {
    if shared.stopping.is_cancelled() {
        return None;
    }
    match rx.try_recv() {
        Err(oneshot::error::TryRecvError::Empty) => None,
        received => Some(received.map_err(drop)),
    }
}

/// Runs the handler once its turn comes, and tells how the attempt ended.
async fn run_handler(
    shared: &Shared,
    record: &JobRecord,
    ctx: &JobContext,
    start: Start,
) -> Outcome {
    let _running = match turn(shared, record, ctx, start).await {
        Ok(permit) => permit,
        Err(outcome) => return outcome,
    };
    let Some(job_type) = shared.types.get(&record.name) else {
        // Only a backend that ignores `FetchParams::names` hands out such a job: give it back
        // without spending an attempt, for a worker that knows its name.
        tracing::warn!(
            job = %record.id,
            name = %record.name,
            "no handler for this job's name is registered in this worker; handing it back"
        );
        return Outcome::Snoozed(UNKNOWN_NAME_BACKOFF);
    };
    // A workflow step's payload is made of the results delivered to it.
    let payload = match payload_of(&record.payload, record.step.as_deref(), &record.inputs) {
        Ok(payload) => payload,
        Err(e) => return Outcome::Failed(JobError::of_kind(ErrorKind::Decode, e)),
    };
    let metrics = shared.metrics.job(&record.queue, &record.name);
    let timer = metrics.started(shared.clock.as_ref(), record.run_at);
    let handler = job_type.run(&payload, record.version, ctx.clone(), shared.state.clone());
    // Boxed, and only when there is a timeout: a timer is large, and most jobs have none.
    let limit = record
        .timeout
        .map(|limit| Box::pin(tokio::time::sleep(limit)));
    let deadline = async {
        match limit {
            Some(limit) => limit.await,
            None => std::future::pending().await,
        }
    };
    // Dropping the handler's future on any other branch stops it. A job is cancelled when its
    // lease is lost, and when the grace period runs out (which hands it back).
    let outcome = tokio::select! {
        biased;
        _ = ctx.cancelled() => if shared.stopped_hard() {
            Outcome::Interrupted
        } else {
            Outcome::Abandoned
        },
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
    metrics.ran(timer);
    if matches!(outcome, Outcome::Interrupted | Outcome::Abandoned) {
        ctx.cancel();
    }
    outcome
}
