//! The core of `jobs`: typed background jobs for Rust.
//!
//! Users normally depend on the `jobs` facade, which re-exports this crate with the `#[job]`
//! attribute and the backends its features select. Backend authors depend on this crate alone:
//! it holds the [`Backend`] trait they implement and, under the `testing` feature, the
//! conformance suite they run.

#![warn(missing_docs)]

mod any;
mod backend;
mod backoff;
mod clock;
mod context;
mod cron;
mod enqueue;
mod error;
mod filter;
mod job;
mod memory;
mod model;
mod operations;
mod presence;
mod registry;
mod serde_millis;
mod state;
mod url_options;
mod wake;
mod worker;

#[cfg(feature = "testing")]
pub mod testing;

pub use any::AnyBackend;
pub use backend::*;
pub use backoff::{parse_duration, Backoff, BackoffKind, MAX_DELAY};
pub use clock::{later, Clock, ManualClock, SystemClock};
pub use context::{CompletionHook, JobContext};
pub use cron::Schedule;
pub use enqueue::{Enqueue, JobExt, JobHandle, Producer, ViaBackend};
pub use error::{BoxError, Error, ErrorKind, JobError, StartProblem};
pub use filter::JobFilter;
pub use job::{
    CronSpec, IntoJobResult, Job, JobOptions, DEFAULT_ATTEMPTS, DEFAULT_PRIORITY, DEFAULT_QUEUE,
};
pub use memory::MemoryBackend;
pub use model::{
    first_holders, AttemptError, DeadReason, Enqueued, ErrorReport, JobId, JobRecord, JobStatus,
    Json, Lease, LeaseToken, LeasedJob, NewJob, QueueCounts, Timestamp,
};
pub use operations::{
    Operations, Page, PageRequest, QueueSummary, ScheduleSummary, WorkerSummary, DEFAULT_PAGE_SIZE,
};
pub use presence::{ScheduleInfo, StoredSchedule, WorkerInfo};
pub use registry::{registered, BoxFuture, JobType, Registration};
pub use state::{State, StateKey, StateMap};
pub use url_options::UrlOptions;
pub use wake::{WakeHub, Wakeup};
pub use worker::{shutdown_signal, JobEvent, Retention, Worker};

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
