//! The outcome sink: the one place where what an attempt ended in is written to the store.
//!
//! Completions, failures and hand-backs are batched, one backend call for each kind that came in
//! meanwhile; a job finished through its completion hook (inside the caller's transaction, say)
//! completes in its own task. The places that ended jobs handed on to reserved ones are counted
//! first ([`places`](super::places)), before the outcomes that free those places are written. The
//! sink decides each failure's retry time from the job's backoff, forgets each written job's
//! lease, and tells the hooks about each accepted write.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::backend::{
    Backend, CompleteParams, Completion, FailParams, Failure, LeaseRef, Release, ReleaseParams,
};
use crate::backoff::random_unit;
use crate::clock;
use crate::context::{BackendContext as _, CompletionHook, JobContext};
use crate::error::Next;
use crate::model::{JobRecord, Json, Timestamp};
use crate::{Error, JobError};

use crate::event::{EventKind, JobEvent};

use super::events::call;
use super::retry::with_retries;
use super::shared::Shared;

/// The most writes of one kind in one call.
const BATCH: usize = 512;

/// How an attempt ended.
pub(crate) enum Outcome {
    /// The handler succeeded with this result.
    Completed(Json),
    /// The handler failed (or panicked, or timed out): retried after the backoff, or dead.
    Failed(JobError),
    /// Shutdown's grace ran out, or the job never started: hand it back, attempt not spent.
    Interrupted,
    /// The handler asked to run again after a while, its attempt not spent.
    Snoozed(Duration),
    /// The lease was lost: another worker may hold the job now, so write nothing.
    Abandoned,
}

/// A write waiting for its batch.
enum Write {
    /// The job's context and when its handler finished: its completed event, made only when a
    /// hook or a subscriber is there to be told.
    Complete(Completion, JobContext, Timestamp),
    /// The event carries the error and the retry time. Boxed: a failure is rare, and every
    /// write is as large as the largest kind.
    Fail(Box<(Failure, JobEvent)>),
    Release(Release),
}

impl OfLease for Write {
    fn lease(&self) -> LeaseRef {
        match self {
            Write::Complete(completion, ..) => completion.lease,
            Write::Fail(failure) => failure.0.lease,
            Write::Release(release) => release.lease,
        }
    }
}

/// Where the runners hand each attempt's outcome; cheap to clone.
#[derive(Clone)]
pub(crate) struct Sink {
    shared: Arc<Shared>,
    writes: mpsc::UnboundedSender<Write>,
}

/// The task that writes the batches; [`Flusher::close`] waits for the last one.
pub(crate) struct Flusher {
    task: JoinHandle<()>,
}

impl Sink {
    /// A sink writing to `shared`'s backend, and its flushing task.
    pub(super) fn start(shared: Arc<Shared>) -> (Sink, Flusher) {
        let (writes, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(flush(shared.clone(), rx));
        (Sink { shared, writes }, Flusher { task })
    }

    /// Records what the attempt of `ctx`'s job ended in.
    pub(super) async fn record(&self, ctx: &JobContext, outcome: Outcome) {
        let record = ctx.record();
        let lease = ctx.lease();
        let send = |write| self.send(write);
        match outcome {
            Outcome::Completed(result) => {
                let metrics = self.shared.metrics.job(&record.queue, &record.name);
                metrics.finished(self.shared.clock.as_ref(), record.created_at);
                let completion = Completion { lease, result };
                match ctx.take_completion_hook() {
                    Some(hook) => self.complete_by(hook, completion, record).await,
                    None => send(Write::Complete(
                        completion,
                        ctx.clone(),
                        self.shared.clock.now(),
                    )),
                }
            }
            Outcome::Failed(error) => send(self.failure(record, lease, error)),
            Outcome::Interrupted => send(Write::Release(Release {
                lease,
                run_at: None,
            })),
            Outcome::Snoozed(delay) => {
                let run_at = clock::later(self.shared.clock.now(), delay);
                send(Write::Release(Release {
                    lease,
                    run_at: Some(run_at),
                }));
            }
            Outcome::Abandoned => {
                tracing::warn!("job stopped: its lease was lost or it was cancelled")
            }
        }
    }

    /// Completes through the job's own hook instead of the batch.
    async fn complete_by(
        &self,
        hook: Box<dyn CompletionHook>,
        completion: Completion,
        record: &JobRecord,
    ) {
        let shared = &self.shared;
        let lease = completion.lease;
        match hook.complete(completion, shared.clock.now()).await {
            Ok(true) => {
                shared.metrics.job(&record.queue, &record.name).completed();
                let event = JobEvent::of(record, EventKind::Completed, shared.clock.now());
                call(&shared.hooks.completed, &event);
                shared.backend.publish(vec![event]);
            }
            Ok(false) => tracing::warn!("completion refused: the lease was lost"),
            Err(e) => tracing::error!(error = %e, "could not record completion"),
        }
        shared.leases.remove(lease);
    }

    /// The failure to write: retried after the job's backoff (or the delay the handler asked
    /// for), or dead when fatal or out of attempts.
    fn failure(&self, record: &JobRecord, lease: LeaseRef, error: JobError) -> Write {
        let now = self.shared.clock.now();
        let report = error.report();
        let retry_at = (error.is_retryable() && record.attempt < record.max_attempts).then(|| {
            let delay = match error.next() {
                Next::RetryIn(delay) => delay,
                _ => record.backoff.delay(record.attempt, random_unit()),
            };
            clock::later(now, delay)
        });
        if retry_at.is_none() {
            let metrics = self.shared.metrics.job(&record.queue, &record.name);
            metrics.finished(self.shared.clock.as_ref(), record.created_at);
        }
        let event = JobEvent::of(record, EventKind::Failed, now).failed(&report.message, retry_at);
        let failure = Failure {
            lease,
            error: report,
            retry_at,
        };
        Write::Fail(Box::new((failure, event)))
    }

    fn send(&self, write: Write) {
        if let Err(unsent) = self.writes.send(write) {
            let lease = unsent.0.lease();
            tracing::error!(job.id = %lease.id, "outcome sink stopped; the lease will lapse");
            self.shared.leases.remove(lease);
        }
    }
}

impl Flusher {
    /// Drops the `last` sink, waits until every outcome sent is written, then hands back the
    /// jobs still held (a job whose run ended without an outcome) without spending an attempt,
    /// and gives up the places under limits that none of them holds now.
    pub(super) async fn close(self, last: Sink) {
        let shared = last.shared.clone();
        drop(last);
        if let Err(e) = self.task.await {
            tracing::error!(error = %e, "outcome sink failed");
        }
        let leftover = shared.leases.snapshot();
        let releases = leftover
            .into_iter()
            .map(|lease| Release {
                lease,
                run_at: None,
            })
            .collect();
        release(&shared, releases).await;
        shared.tell_places(false).await;
    }
}

/// The writes of one flush, by kind.
#[derive(Default)]
struct Batch {
    completions: Vec<Completion>,
    completed: Vec<Completed>,
    /// Each failure with its event, which carries the error and the retry time.
    failed: Vec<(Failure, JobEvent)>,
    releases: Vec<Release>,
}

impl Batch {
    /// An empty batch with room for the completions among `writes`, most often all of them.
    fn sized_for(writes: &[Write]) -> Batch {
        let completions = writes
            .iter()
            .filter(|w| matches!(w, Write::Complete(..)))
            .count();
        Batch {
            completions: Vec::with_capacity(completions),
            completed: Vec::with_capacity(completions),
            ..Batch::default()
        }
    }

    fn push(&mut self, write: Write) {
        match write {
            Write::Complete(completion, ctx, at) => {
                self.completions.push(completion);
                self.completed.push(Completed { ctx, at });
            }
            Write::Fail(failure) => self.failed.push(*failure),
            Write::Release(release) => self.releases.push(release),
        }
    }

    async fn write(self, shared: &Shared) {
        shared.tell_places(false).await;
        complete(shared, self.completions, self.completed).await;
        fail(shared, self.failed).await;
        release(shared, self.releases).await;
    }
}

/// Writes batches until every sink is gone.
async fn flush(shared: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<Write>) {
    let mut received = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut received, BATCH).await > 0 {
        // Let the handlers that are finishing too send their outcomes, so they join this write.
        tokio::task::yield_now().await;
        while received.len() < BATCH {
            match rx.try_recv() {
                Ok(write) => received.push(write),
                Err(_) => break,
            }
        }
        let mut batch = Batch::sized_for(&received);
        for write in received.drain(..) {
            batch.push(write);
        }
        batch.write(&shared).await;
    }
}

/// A completion's job, and when its handler finished.
struct Completed {
    ctx: JobContext,
    at: Timestamp,
}

async fn complete(shared: &Shared, items: Vec<Completion>, completed: Vec<Completed>) {
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
    let heard = shared.backend.events_heard();
    let told = heard || !shared.hooks.completed.is_empty();
    let mut accepted = Vec::new();
    for Completed { ctx, at } in settle(shared, &completed, written) {
        shared.metrics.job(ctx.queue(), ctx.name()).completed();
        if told {
            let event = JobEvent::of(ctx.record(), EventKind::Completed, *at);
            call(&shared.hooks.completed, &event);
            if heard {
                accepted.push(event);
            }
        }
    }
    shared.backend.publish(accepted);
}

async fn fail(shared: &Shared, failed: Vec<(Failure, JobEvent)>) {
    if failed.is_empty() {
        return;
    }
    let written = with_retries(|| {
        shared.backend.fail(FailParams {
            items: failed.iter().map(|(failure, _)| failure.clone()).collect(),
            now: shared.clock.now(),
        })
    })
    .await;
    let heard = shared.backend.events_heard();
    let mut accepted = Vec::new();
    for (_, event) in settle(shared, &failed, written) {
        let metrics = shared.metrics.job(&event.queue, &event.name);
        metrics.failed(event.retry_at.is_some());
        let error = event.error.as_deref().unwrap_or_default();
        match event.retry_at {
            Some(at) => {
                tracing::warn!(job.id = %event.id, error, retry_at = %at, "attempt failed; will retry");
                shared.retries.due_at(at);
            }
            None => tracing::error!(job.id = %event.id, error, "job is dead"),
        }
        call(&shared.hooks.failed, event);
        if heard {
            accepted.push(event.clone());
        }
        if event.retry_at.is_none() {
            let dead = event.as_kind(EventKind::Dead);
            call(&shared.hooks.dead, &dead);
            if heard {
                accepted.push(dead);
            }
        }
    }
    shared.backend.publish(accepted);
}

/// Hands jobs back; a snoozed one is due again at its `run_at`.
async fn release(shared: &Shared, items: Vec<Release>) {
    if items.is_empty() {
        return;
    }
    let written = with_retries(|| {
        shared.backend.release(ReleaseParams {
            items: items.clone(),
            now: shared.clock.now(),
        })
    })
    .await;
    for release in settle(shared, &items, written) {
        if let Some(at) = release.run_at {
            shared.retries.due_at(at);
        }
    }
}

/// What a write was about: one attempt of a job, by its lease.
trait OfLease {
    fn lease(&self) -> LeaseRef;
}

impl OfLease for Completed {
    fn lease(&self) -> LeaseRef {
        self.ctx.lease()
    }
}

impl OfLease for (Failure, JobEvent) {
    fn lease(&self) -> LeaseRef {
        self.0.lease
    }
}

impl OfLease for Release {
    fn lease(&self) -> LeaseRef {
        self.lease
    }
}

/// Forgets the leases of the jobs written, and gives the items whose write the store
/// accepted.
fn settle<'a, T: OfLease>(
    shared: &Shared,
    items: &'a [T],
    written: Result<Vec<bool>, Error>,
) -> Vec<&'a T> {
    for item in items {
        shared.leases.remove(item.lease());
    }
    match written {
        Ok(flags) => {
            let mut accepted = Vec::with_capacity(items.len());
            for (item, ok) in items.iter().zip(flags) {
                if ok {
                    accepted.push(item);
                } else {
                    tracing::warn!(job.id = %item.lease().id, "write refused: the lease was lost");
                }
            }
            accepted
        }
        Err(e) => {
            // The leases lapse and the jobs run again: at least once, never lost.
            tracing::error!(error = %e, jobs = items.len(), "could not record outcomes; their leases will lapse");
            Vec::new()
        }
    }
}
