//! `JobContext`: what a running handler knows of its job, and how it talks back.

use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::any::AnyBackend;
use crate::backend::{Backend, Completion, LeaseRef, ProgressParams};
use crate::clock::{Clock, SystemClock};
use crate::event::{EventKind, JobEvent};
use crate::model::{JobId, LeasedJob, Timestamp};
use crate::Error;

/// Finishes a job in place of the worker's own completion write, e.g. inside a database
/// transaction that holds the handler's effects (see the Postgres backend).
#[async_trait]
pub trait CompletionHook: Send + 'static {
    /// Marks the job completed with `completion.result`; false when the lease was lost.
    async fn complete(
        self: Box<Self>,
        completion: Completion,
        now: Timestamp,
    ) -> Result<bool, Error>;
}

/// The running job's id, attempt and lease, its progress channel and its cancellation signal.
///
/// Add a `ctx: JobContext` parameter to a `#[job]` fn to receive it.
#[derive(Clone)]
pub struct JobContext {
    inner: Arc<Inner>,
}

struct Inner {
    id: JobId,
    name: String,
    queue: String,
    attempt: u32,
    max_attempts: u32,
    lease: LeaseRef,
    backend: AnyBackend,
    cancel: CancellationToken,
    hook: Mutex<Option<Box<dyn CompletionHook>>>,
}

impl JobContext {
    /// The context of a job leased from `backend` (backend SPI: the worker makes contexts).
    #[doc(hidden)]
    pub fn new(backend: AnyBackend, job: &LeasedJob) -> Self {
        let record = &job.record;
        JobContext {
            inner: Arc::new(Inner {
                id: record.id,
                name: record.name.clone(),
                queue: record.queue.clone(),
                attempt: record.attempt,
                max_attempts: record.max_attempts,
                lease: job.lease(),
                backend,
                cancel: CancellationToken::new(),
                hook: Mutex::new(None),
            }),
        }
    }

    /// The job's id.
    pub fn id(&self) -> JobId {
        self.inner.id
    }

    /// The job's stored name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The job's queue.
    pub fn queue(&self) -> &str {
        &self.inner.queue
    }

    /// This attempt's number, from 1.
    pub fn attempt(&self) -> u32 {
        self.inner.attempt
    }

    /// How many attempts the job has in all.
    pub fn max_attempts(&self) -> u32 {
        self.inner.max_attempts
    }

    /// Whether a failure now makes the job dead.
    pub fn is_last_attempt(&self) -> bool {
        self.inner.attempt >= self.inner.max_attempts
    }

    /// Records progress (percent, capped at 100), readable by id from any process.
    ///
    /// Fails with [`Error::LeaseLost`] when this worker no longer holds the job.
    pub async fn progress(&self, percent: u8) -> Result<(), Error> {
        let params = ProgressParams {
            lease: self.inner.lease,
            progress: percent.min(100),
            now: SystemClock.now(),
        };
        let backend = &self.inner.backend;
        if backend.progress(params).await? {
            if !backend.events_heard() {
                return Ok(());
            }
            let kind = EventKind::Progress(params.progress);
            let event = JobEvent::new(
                self.inner.id,
                &self.inner.name,
                &self.inner.queue,
                kind,
                self.inner.attempt,
                params.now,
            );
            backend.publish(vec![event]);
            Ok(())
        } else {
            Err(Error::LeaseLost(self.inner.id))
        }
    }

    /// Whether the job should stop: shutdown's grace period ran out, the job was cancelled, or
    /// its lease was lost.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Resolves when the job should stop (see [`JobContext::is_cancelled`]).
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.inner.cancel.cancelled()
    }

    /// Whether the job finishes through a completion hook (its handler's writes commit with
    /// its completion).
    pub(crate) fn has_completion_hook(&self) -> bool {
        self.inner
            .hook
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    pub(crate) fn take_completion_hook(&self) -> Option<Box<dyn CompletionHook>> {
        self.inner
            .hook
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    pub(crate) fn cancel(&self) {
        self.inner.cancel.cancel()
    }
}

/// What a backend's extensions reach in a running job's context (backend SPI, not for
/// handlers): the attempt's lease, the backend the job came from, and a hook that finishes the
/// job in place of the worker's own completion write (as `jobs_postgres::transaction` does, so
/// that a handler's writes and its job's completion commit together).
pub trait BackendContext {
    /// The lease this attempt runs under.
    fn lease(&self) -> LeaseRef;
    /// The backend the job came from.
    fn backend(&self) -> &AnyBackend;
    /// Has the worker finish this job through `hook` instead of its own completion write.
    fn set_completion_hook(&self, hook: Box<dyn CompletionHook>);
}

impl BackendContext for JobContext {
    fn lease(&self) -> LeaseRef {
        self.inner.lease
    }

    fn backend(&self) -> &AnyBackend {
        &self.inner.backend
    }

    fn set_completion_hook(&self, hook: Box<dyn CompletionHook>) {
        *self.inner.hook.lock().unwrap_or_else(|e| e.into_inner()) = Some(hook);
    }
}

impl fmt::Debug for JobContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobContext")
            .field("id", &self.inner.id)
            .field("name", &self.inner.name)
            .field("queue", &self.inner.queue)
            .field("attempt", &self.inner.attempt)
            .finish()
    }
}
