//! Typed background jobs for Rust.
//!
//! An attribute turns an async fn into a job; a worker runs it in the background with retries,
//! backoff, priorities, schedules and a dead-letter set; storage is a pluggable backend chosen by
//! a Cargo feature and a URL: `memory://` (always there), `postgres://…` (feature `postgres`),
//! `redis://…` (feature `redis`).
//!
//! Operations on stored jobs (list and filter, retry, cancel, delete, purge, queues, workers,
//! schedules) are the methods of [`Operations`], which every backend implements; [`testing`]
//! holds the helpers for an application's own tests.
//!
//! ```
//! use jobs::prelude::*;
//!
//! #[derive(Debug, serde::Serialize, serde::Deserialize, PartialEq)]
//! pub struct Sent { to: String }
//!
//! #[job(queue = "email", attempts = 3, backoff = "exponential")]
//! async fn send_welcome_email(user_id: i64, email: String, ctx: JobContext) -> Result<Sent, JobError> {
//!     ctx.progress(50).await?;
//!     Ok(Sent { to: email })
//! }
//!
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! let backend = jobs::connect("memory://").await?;
//! let job = SendWelcomeEmail::new(123, "alice@example.com".into()).enqueue(&backend).await?;
//!
//! let worker = jobs::Worker::new(backend.clone()).queues(["email"]).concurrency(5);
//! let running = tokio::spawn(worker.run_until(async { tokio::time::sleep(std::time::Duration::from_millis(500)).await }));
//! let sent = job.wait(&backend).await?;
//! assert_eq!(sent, Sent { to: "alice@example.com".into() });
//! running.await.unwrap()?;
//! # Ok::<(), jobs::Error>(()) }).unwrap();
//! ```

#![warn(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod connect;

pub use connect::connect;
pub use jobs_macros::{job, job_upgrade};

// Enqueueing and reading jobs back.
pub use jobs_core::{
    AnyBackend, Backoff, Coalesce, Enqueue, Error, JobExt, JobHandle, JobId, JobRecord, JobStatus,
    KeyLimits, MemoryBackend, Timestamp,
};
// Writing and running jobs.
pub use jobs_core::{
    shutdown_signal, ErrorKind, Job, JobContext, JobError, JobEvent, JobState, Retention,
    StartProblem, State, Worker,
};
// Workflows of jobs.
pub use jobs_core::workflow::{
    Follows, Group, StepInput, StepRole, Workflow, WorkflowHandle, WorkflowId, WorkflowState,
    WorkflowStatus, WorkflowStep,
};
// Operating them.
pub use jobs_core::{
    AttemptError, DeadReason, Enqueued, EventKind, EventStream, JobFilter, JobTypeInfo, Operations,
    Page, PageRequest, PublishedType, QueueCounts, QueueLimits, QueueSummary, Rate, Received,
    ScheduleInfo, ScheduleSummary, Stranded, WorkerInfo, WorkerSummary, FLOW_SCAN, STRANDED_SCAN,
};

/// The PostgreSQL backend (feature `postgres`).
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use jobs_postgres as postgres;
/// The Redis backend (feature `redis`).
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use jobs_redis as redis;
/// The web dashboard (feature `web`): an axum router to nest under any path.
#[cfg(feature = "web")]
#[cfg_attr(docsrs, doc(cfg(feature = "web")))]
pub use jobs_web as web;

/// The metrics the worker records, and their names (feature `metrics`).
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub use jobs_core::metrics;

/// Helpers for an application's tests, on the memory backend: [`MemoryBackend::enqueued`],
/// [`Worker::drain`] and [`perform`](testing::perform).
pub mod testing {
    pub use jobs_core::testkit::{
        assert_payload_shapes, perform, perform_stored, Drained, Perform,
    };
    pub use jobs_core::ManualClock;
}

/// What a job author and an enqueuer need: `use jobs::prelude::*;`.
pub mod prelude {
    pub use jobs_core::{JobContext, JobError, JobExt, JobState, State};
    pub use jobs_macros::{job, job_upgrade};
}

#[doc(hidden)]
pub use jobs_core::__private;

/// The README's examples, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
