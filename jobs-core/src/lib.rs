//! The core of `jobs`: typed background jobs for Rust.
//!
//! Applications depend on the `jobs` facade, which re-exports the application API of this crate
//! (jobs, enqueueing, the worker, [`Operations`], [`testkit`]) with the `#[job]` attribute and
//! the backends its features select.
//!
//! This crate is also the **backend SPI**: what a storage backend's author implements and
//! tests against. It is versioned with the facade, which pins it exactly; its SPI items may
//! change in any release:
//!
//! - [`Backend`], the one trait a backend implements in full, with a params struct per
//!   operation ([`FetchParams`], [`ManageParams`], …), leases ([`LeaseRef`], [`LeasedJob`]),
//!   and [`first_holders`] / [`NewJob::initial_status`] / [`ErrorReport::lease_expired`], the
//!   policy a backend applies rather than re-derives;
//! - [`Producer`], to enqueue through a driver's own handles (a pool, a transaction);
//! - [`WakeHub`] and [`Wakeup`], for wake-up signals;
//! - [`UrlOptions`], for options in a backend URL;
//! - the conformance suite every backend passes (`testing`, feature `testing`):
//!
//! ```ignore
//! // tests/my_backend.rs
//! jobs_core::conformance!(my_backend_tests::fresh_backend);
//! ```
//!
//! A backend crate's own tests can write `#[job(crate = "jobs_core")]`.
//!
//! Feature `metrics` records counters, histograms and queue-depth gauges through the `metrics`
//! facade: see [`metrics`] for their names, labels and meaning.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod any;
mod backend;
mod backoff;
mod by_name;
mod catalog;
mod clock;
mod context;
mod cron;
mod deliveries;
mod enqueue;
mod error;
mod event;
mod fast_hash;
pub mod fates;
mod filter;
#[cfg(test)]
mod fixtures;
mod flow;
mod ids;
mod inject;
mod job;
mod liveness;
mod memory;
pub mod metrics;
mod model;
mod operations;
mod order;
#[cfg(feature = "otel")]
pub mod otel;
mod payload;
mod presence;
mod registry;
mod result_json;
mod serde_millis;
mod state;
mod status;
pub mod testkit;
pub mod upgrade;
mod url_options;
mod wake;
mod worker;
pub mod workflow;

#[cfg(feature = "testing")]
pub mod testing;

pub use any::AnyBackend;
pub use backend::*;
pub use backoff::{parse_duration, Backoff, BackoffKind, MAX_DELAY};
pub use catalog::{JobTypeInfo, KnownJob, PublishedType, StoredVersion};
pub use clock::{later, Clock, ManualClock, SystemClock, Timestamp};
pub use context::{BackendContext, CompletionHook, JobContext};
pub use cron::Schedule;
pub use deliveries::{DeliveryLedger, END_WAIT};
pub use enqueue::{Enqueue, JobExt, JobHandle, Producer, ViaBackend, WAIT_CHECK};
pub use error::{BoxError, Error, ErrorKind, ErrorReport, JobError, StartProblem};
pub use event::{
    encode_events, EventHub, EventKind, EventStream, JobEvent, ProbeListeners, Publisher, Received,
    SendEvents,
};
pub use filter::JobFilter;
pub use flow::{Coalesce, KeyLimits, QueueFlow, QueueLimits, Rate, FLOW_SCAN};
pub use ids::{JobId, LeaseToken};
pub use job::{
    CronSpec, IntoJobResult, Job, JobOptions, DEFAULT_ATTEMPTS, DEFAULT_PRIORITY, DEFAULT_QUEUE,
};
pub use liveness::{liveness, Hold, Liveness, LivenessKeeper};
pub use memory::MemoryBackend;
pub use model::{
    first_holders, first_version, AttemptError, DeadReason, Enqueued, JobRecord, Json, Lease,
    LeaseRef, LeasedJob, NewJob, QueueCounts,
};
pub use operations::{
    Operations, Page, PageRequest, QueueSummary, ScheduleSummary, Stranded, WorkerSummary,
    DEFAULT_PAGE_SIZE, STRANDED_SCAN,
};
pub use presence::{ScheduleInfo, StoredSchedule, WorkerInfo};
pub use registry::{registered, BoxFuture, JobType, Registration};
pub use state::{JobState, State, StateKey, StateMap};
pub use status::{JobStatus, UnknownStatus};
pub use url_options::UrlOptions;
pub use wake::{Relay, WakeHub, Wakeup};
pub use worker::{shutdown_signal, Retention, Worker};
pub use workflow::{
    StepInput, Workflow, WorkflowHandle, WorkflowId, WorkflowState, WorkflowStatus,
};

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
