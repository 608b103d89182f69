//! What `#[job]`'s generated code names, and nothing else: not a public API.
//!
//! The facade re-exports this module whole as `jobs::__private`; a backend crate's own tests
//! write `#[job(crate = "jobs_core")]` to reach it directly.

pub use inventory;
pub use serde;
pub use serde_json;

pub use crate::inject::Inject;
pub use crate::payload::Payload;
pub use crate::upgrade::{upgrade_with, PayloadVersion, Upgrade};
pub use crate::{
    Backoff, Coalesce, CronSpec, IntoJobResult, Job, JobContext, JobError, JobOptions, KeyLimits,
    Rate, Registration, StateKey, StateMap,
};
