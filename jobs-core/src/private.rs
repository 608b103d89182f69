//! What `#[job]`'s generated code names, and nothing else: not a public API.
//!
//! The facade re-exports this module whole as `jobs::__private`; a backend crate's own tests
//! write `#[job(crate = "jobs_core")]` to reach it directly.

pub use inventory;
pub use schemars;
pub use serde;
pub use serde_json;

pub use crate::inject::Inject;
pub use crate::payload::Payload;
pub use crate::upgrade::{upgrade_with, PayloadVersion, Upgrade};
pub use crate::Json;
pub use serde_json::value::RawValue;

/// The JSON Schema of a payload field of type `T`, for the derive of `#[job]`'s struct.
pub fn field_schema<T: Payload>(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    T::field_schema(generator)
}

/// The JSON Schema of `T`, for `Job::schema`.
pub fn schema_of<T: schemars::JsonSchema>() -> serde_json::Value {
    schemars::schema_for!(T).to_value()
}
pub use crate::{
    Backoff, Coalesce, CronSpec, IntoJobResult, Job, JobContext, JobError, JobOptions, KeyLimits,
    Rate, Registration, StateKey, StateMap, StepInput,
};
