//! `JobContext`: what a running handler knows of its job, and how it talks back.

use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::any::AnyBackend;
use crate::backend::{Backend, Completion, LeaseRef, ProgressParams};
use crate::clock::{Clock, SystemClock};
use crate::event::{EventKind, JobEvent};
use crate::model::{JobId, JobRecord, LeaseToken, LeasedJob, Timestamp};
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
    /// The leased job, as it was fetched: the worker runs it from here, so that a job's record
    /// is held once, not copied into its context.
    record: JobRecord,
    token: LeaseToken,
    backend: AnyBackend,
    cancel: CancellationToken,
    hook: Mutex<Option<Box<dyn CompletionHook>>>,
}

impl JobContext {
    /// The context of a job leased from `backend` (backend SPI: the worker makes contexts).
    #[doc(hidden)]
    pub fn new(backend: AnyBackend, job: &LeasedJob) -> Self {
        Self::of(backend, job.clone())
    }

    /// The context of `job`, which it keeps.
    pub(crate) fn of(backend: AnyBackend, job: LeasedJob) -> Self {
        JobContext {
            inner: Arc::new(Inner {
                record: job.record,
                token: job.token,
                backend,
                cancel: CancellationToken::new(),
                hook: Mutex::new(None),
            }),
        }
    }

    /// The job as it was leased.
    pub(crate) fn record(&self) -> &JobRecord {
        &self.inner.record
    }

    /// The job's id.
    pub fn id(&self) -> JobId {
        self.inner.record.id
    }

    /// The job's stored name.
    pub fn name(&self) -> &str {
        &self.inner.record.name
    }

    /// The job's queue.
    pub fn queue(&self) -> &str {
        &self.inner.record.queue
    }

    /// This attempt's number, from 1.
    pub fn attempt(&self) -> u32 {
        self.inner.record.attempt
    }

    /// How many attempts the job has in all.
    pub fn max_attempts(&self) -> u32 {
        self.inner.record.max_attempts
    }

    /// Whether a failure now makes the job dead.
    pub fn is_last_attempt(&self) -> bool {
        self.attempt() >= self.max_attempts()
    }

    /// Records progress (percent, capped at 100), readable by id from any process.
    ///
    /// Fails with [`Error::LeaseLost`] when this worker no longer holds the job.
    pub async fn progress(&self, percent: u8) -> Result<(), Error> {
        let params = ProgressParams {
            lease: self.lease(),
            progress: percent.min(100),
            now: SystemClock.now(),
        };
        let backend = &self.inner.backend;
        if backend.progress(params).await? {
            if !backend.events_heard() {
                return Ok(());
            }
            let kind = EventKind::Progress(params.progress);
            let event = JobEvent::of(&self.inner.record, kind, params.now);
            backend.publish(vec![event]);
            Ok(())
        } else {
            Err(Error::LeaseLost(self.id()))
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
        LeaseRef {
            id: self.inner.record.id,
            token: self.inner.token,
        }
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
            .field("id", &self.id())
            .field("name", &self.name())
            .field("queue", &self.queue())
            .field("attempt", &self.attempt())
            .finish()
    }
}
