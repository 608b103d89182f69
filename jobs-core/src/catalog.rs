//! The catalog of job types. A worker publishes the types it runs to the store when it starts
//! (stored name, version, defaults, and the JSON Schema of the payload), so that programs which
//! do not link the application's types (the CLI, the dashboard, a script) can read a payload's
//! shape and enqueue a job by name with a JSON payload checked against it
//! ([`Operations::enqueue_json`](crate::Operations::enqueue_json)).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::backoff::Backoff;
use crate::model::{JobId, Json, NewJob, Timestamp};

/// One version of a job type, as workers publish it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobTypeInfo {
    /// The stable stored name.
    pub name: String,
    /// The payload's version.
    pub version: u32,
    /// The queue its jobs wait in unless an enqueue names another.
    pub queue: String,
    /// Attempts before dead.
    pub max_attempts: u32,
    /// Lower runs first.
    pub priority: i16,
    /// The delay before each retry.
    pub backoff: Backoff,
    /// How long one attempt may run.
    #[serde(with = "crate::serde_millis::option")]
    pub timeout: Option<Duration>,
    /// Tags every job of the type carries.
    pub tags: Vec<String>,
    /// The JSON Schema of the payload, when the type has one (`#[job]` derives it).
    pub schema: Option<serde_json::Value>,
}

impl JobTypeInfo {
    /// A new job of this type with `payload` (taken to be of this version), ready at `now`,
    /// with the type's defaults.
    pub fn new_job(&self, payload: Json, now: Timestamp) -> NewJob {
        NewJob {
            id: JobId::new(),
            name: self.name.clone(),
            queue: self.queue.clone(),
            payload,
            version: self.version,
            priority: self.priority,
            run_at: now,
            max_attempts: self.max_attempts,
            backoff: self.backoff,
            timeout: self.timeout,
            unique_key: None,
            trace_context: None,
            tags: self.tags.clone(),
            key_limits: None,
            coalesce: None,
            step: None,
        }
    }
}

/// A published job type, with when it was last published.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PublishedType {
    /// What was published.
    pub info: JobTypeInfo,
    /// When a worker last published it.
    pub published_at: Timestamp,
}

/// A job name and the newest payload version a worker runs of it: a fetch takes the jobs of
/// that name stored at this version or older.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KnownJob {
    /// The stored name.
    pub name: String,
    /// The newest version.
    pub version: u32,
}

impl KnownJob {
    /// Whether a fetch given `known` takes a job of `name` stored at `version`: every job
    /// when `known` is `None`, else one of a listed name at its version or older.
    pub fn admits(known: Option<&[KnownJob]>, name: &str, version: u32) -> bool {
        known.is_none_or(|known| known.iter().any(|k| k.name == name && version <= k.version))
    }
}

/// How many waiting or running jobs of a name are stored at one payload version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredVersion {
    /// The stored name.
    pub name: String,
    /// The version.
    pub version: u32,
    /// How many jobs (pending, scheduled or running).
    pub jobs: u64,
}
