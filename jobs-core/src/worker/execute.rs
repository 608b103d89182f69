//! Runs leased jobs: a runner takes one job after another from the run queue, runs its
//! handler (a panic is a failed attempt, not a dead worker), enforces the timeout, hands its
//! place under its queue's limit on to a reserved job waiting for one, and hands what the
//! attempt ended in to the sink. A reserved job first waits, in a task of its own, for a place
//! handed on by an ended one.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio_util::task::{AbortOnDropHandle, TaskTracker};
use tracing::Instrument;

use crate::context::{BackendContext as _, JobContext};
use crate::error::{ErrorKind, Next};
use crate::model::JobRecord;
use crate::workflow::payload_of;
use crate::JobError;

use super::handoff::{Hand, Handed};
use super::outcome::{Outcome, Sink};
use super::run_queue::{Place, Queued, RunQueue};
use super::shared::Shared;
use super::unwind::{panic_message, panic_text, CatchUnwind};

/// How long a job of a name this worker does not run is handed back for.
const UNKNOWN_NAME_BACKOFF: Duration = Duration::from_secs(1);

/// What a runner needs besides the job: the worker's shared state, the queue it takes jobs
/// from, the sink of their outcomes, and where the tasks of jobs that wait are tracked.
#[derive(Clone)]
pub(crate) struct Runners {
    pub shared: Arc<Shared>,
    pub queue: Arc<RunQueue>,
    pub sink: Sink,
    pub tasks: TaskTracker,
}

impl Runners {
    /// Spawns one runner per place, tracked with the jobs' other tasks. Dropping the handles
    /// stops them, jobs and all, as the death of the process would.
    pub(super) fn spawn(&self) -> Vec<AbortOnDropHandle<()>> {
        (0..self.queue.runners())
            .map(|_| AbortOnDropHandle::new(self.tasks.spawn(self.clone().run())))
            .collect()
    }

    /// Runs queued jobs one after another until the queue closes.
    async fn run(self) {
        while let Some((job, place)) = self.queue.next().await {
            // A panic outside the handler (a bug of the worker's own) loses that job's outcome
            // (its lease is handed back when the worker stops), never the runner.
            let running = pin!(self.execute(job, place));
            if let Err(panic) = CatchUnwind(running).await {
                tracing::error!(panic = panic_text(&*panic), "a job's run panicked");
            }
        }
    }

    /// Queues `jobs` for the runners, and hands back at once what the queue refuses.
    pub(super) fn queue_all(&self, jobs: impl IntoIterator<Item = Queued>) {
        for job in self.queue.admit(jobs) {
            let runners = self.clone();
            self.tasks
                .spawn(async move { runners.hand_back(job).await });
        }
    }

    /// Reserved jobs: each waits for a place in a task of its own (see
    /// [`handoff`](super::handoff)), then is queued.
    pub(super) fn wait_for_places(&self, reserved: Vec<(Queued, Handed)>) {
        for (job, handed) in reserved {
            self.tasks.spawn(self.clone().wait_for_place(job, handed));
        }
    }

    /// A reserved job: once an ended job hands it its place, it is queued as any other.
    async fn wait_for_place(self, job: Queued, mut handed: Handed) {
        let shared = &self.shared;
        // Most often handed its place already (by a job that ended while it was fetched): no
        // need to wait for it.
        let now = if job.ctx.is_cancelled() {
            None
        } else {
            ready(shared, &mut handed)
        };
        let handed = match now {
            Some(handed) => handed.unwrap_or(false),
            None => tokio::select! {
                biased;
                _ = shared.stopping.cancelled() => false,
                _ = job.ctx.cancelled() => false,
                handed = handed => handed.unwrap_or(false),
            },
        };
        let refused = if handed {
            self.queue.admit([job])
        } else {
            vec![job]
        };
        for job in refused {
            self.hand_back(job).await;
        }
    }

    /// Ends a job that never started: handed back, its attempt not spent (nothing is written
    /// when its lease was lost meanwhile).
    pub(super) async fn hand_back(&self, job: Queued) {
        let outcome = if job.ctx.is_cancelled() {
            Outcome::Abandoned
        } else {
            Outcome::Interrupted
        };
        let span = span_of(job.ctx.record());
        finish(&self.shared, &job.ctx, outcome, false, &self.sink)
            .instrument(span)
            .await;
    }

    /// Runs one job whose turn came to its recorded outcome. Its window slot is held until the
    /// end, or until the handler is done and its place waits for a fetch's reserved jobs; the
    /// runner's place until the handler is done and the outcome needs no wait.
    fn execute<'a>(
        &'a self,
        job: Queued,
        place: Place<'a>,
    ) -> impl Future<Output = ()> + Send + 'a {
        let Queued { ctx, mut slot } = job;
        let span = span_of(ctx.record());
        async move {
            let shared = &self.shared;
            let record = ctx.record();
            let outcome = run_handler(shared, record, &ctx).await;
            let committing = matches!(outcome, Outcome::Completed(_)) && ctx.has_completion_hook();
            let hand = if hands_on(&outcome, committing) {
                shared
                    .handoffs
                    .hand(&record.queue, ctx.lease(), &shared.leases)
            } else {
                Hand::Nowhere
            };
            let handed = match hand {
                Hand::Handed => true,
                // Its handler is done: its slot goes to the next fetch, its place to the next
                // job, while it waits for this one. Shutdown drops the fetch under way, whose
                // answer then never comes.
                Hand::Later(answer) => {
                    drop((slot.take(), place));
                    let finishing = self.clone().finish_later(ctx, outcome, answer);
                    self.tasks.spawn(finishing.in_current_span());
                    return;
                }
                Hand::Nowhere => false,
            };
            if committing {
                // The hook's commit is the job's own wait: the next job need not wait for it.
                drop(place);
                let (shared, sink) = (shared.clone(), self.sink.clone());
                self.tasks.spawn(
                    async move {
                        finish(&shared, &ctx, outcome, handed, &sink).await;
                        drop(slot);
                    }
                    .in_current_span(),
                );
                return;
            }
            finish(shared, &ctx, outcome, handed, &self.sink).await;
            drop((slot, place));
        }
        .instrument(span)
    }

    /// Records the outcome of a job whose place waits for the reserved jobs of a fetch.
    async fn finish_later(
        self,
        ctx: JobContext,
        outcome: Outcome,
        answer: oneshot::Receiver<bool>,
    ) {
        let handed = tokio::select! {
            answer = answer => answer.unwrap_or(false),
            _ = self.shared.stopping.cancelled() => false,
        };
        finish(&self.shared, &ctx, outcome, handed, &self.sink).await;
    }
}

/// Records what a job's attempt ended in; one whose place went to no reserved job gives it up
/// first.
async fn finish(shared: &Shared, ctx: &JobContext, outcome: Outcome, handed: bool, sink: &Sink) {
    if !handed {
        let record = ctx.record();
        shared.leases.finishing(ctx.lease());
        shared.handoffs.trim(&record.queue, &shared.leases);
    }
    sink.record(ctx, outcome).await;
}

/// The span a job runs in, named and attributed for OpenTelemetry's messaging conventions (see
/// `crate::otel`).
fn span_of(record: &JobRecord) -> tracing::Span {
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
    span
}

/// Whether an attempt that ended in `outcome` hands its place on: when the sink writes its
/// outcome (not `committing` through a completion hook, whose commit must land before the
/// place is free) and it ran (not handed back at shutdown, nor stopped for a lost lease).
fn hands_on(outcome: &Outcome, committing: bool) -> bool {
    match outcome {
        Outcome::Completed(_) => !committing,
        Outcome::Failed(_) | Outcome::Snoozed(_) => true,
        Outcome::Interrupted | Outcome::Abandoned => false,
    }
}

/// What `rx` holds already, unless the worker is stopping: what the `select!` above would
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

/// Runs the handler, and tells how the attempt ended.
async fn run_handler(shared: &Shared, record: &JobRecord, ctx: &JobContext) -> Outcome {
    let Some(job_type) = shared.types.get(&*record.name) else {
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
    // Decoding (and upgrading) the payload runs here, outside the handler's future: a panic
    // in a `Deserialize` or an upgrade fails the attempt as a decode error does, for good
    // (the same bytes would panic again).
    let built = catch_unwind(AssertUnwindSafe(|| {
        job_type.run(&payload, record.version, ctx.clone(), shared.state.clone())
    }));
    let handler = match built {
        Ok(handler) => handler,
        Err(panic) => {
            metrics.ran(timer);
            let message = format!("payload decoding panicked: {}", panic_text(&*panic));
            return Outcome::Failed(JobError::of_kind(ErrorKind::Decode, message));
        }
    };
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
