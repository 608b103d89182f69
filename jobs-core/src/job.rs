//! The `Job` trait: what `#[job]` implements for the struct it generates.

use std::future::Future;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::backoff::Backoff;
use crate::context::JobContext;
use crate::flow::{Coalesce, KeyLimits};
use crate::state::{StateKey, StateMap};
use crate::JobError;

/// Attempts a job has when its attribute names none: the first run and four retries.
pub const DEFAULT_ATTEMPTS: u32 = 5;
/// Priority of a job that names none; lower runs first.
pub const DEFAULT_PRIORITY: i16 = 10;
/// Queue of a job that names none.
pub const DEFAULT_QUEUE: &str = "default";

/// A job type's defaults, from its attribute; each can be overridden per enqueue.
#[derive(Clone, Debug, PartialEq)]
pub struct JobOptions {
    /// The queue it waits in.
    pub queue: String,
    /// Attempts before dead (at least 1).
    pub max_attempts: u32,
    /// Delay before each retry.
    pub backoff: Backoff,
    /// Lower runs first.
    pub priority: i16,
    /// How long one attempt may run.
    pub timeout: Option<Duration>,
    /// Tags every job of the type carries (more can be added per enqueue with `.tag(..)`).
    pub tags: Vec<String>,
}

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions {
            queue: DEFAULT_QUEUE.to_string(),
            max_attempts: DEFAULT_ATTEMPTS,
            backoff: Backoff::default(),
            priority: DEFAULT_PRIORITY,
            timeout: None,
            tags: Vec::new(),
        }
    }
}

/// A periodic job's schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CronSpec {
    /// A cron expression: five fields, or six with seconds first.
    pub expression: &'static str,
    /// An IANA time zone name (`"Europe/Paris"`); UTC when `None`.
    pub timezone: Option<&'static str>,
}

/// A typed background job. `#[job]` implements it; the struct's fields are the payload.
///
/// ```
/// use jobs_core::{Job, JobContext, JobError, JobOptions, StateMap};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Resize { image: u64 }
///
/// impl Job for Resize {
///     const NAME: &'static str = "resize";
///     type Output = u64;
///     fn options() -> JobOptions { JobOptions { queue: "images".into(), ..Default::default() } }
///     async fn run(self, _ctx: JobContext, _state: StateMap) -> Result<u64, JobError> {
///         Ok(self.image)
///     }
/// }
/// assert_eq!(Resize::options().queue, "images");
/// ```
pub trait Job: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The stable stored name. Renaming the Rust type keeps queued jobs working; changing this
    /// orphans them.
    const NAME: &'static str;

    /// The payload's version, stored with each job: raise it when the payload's shape changes,
    /// and register an upgrade from the previous one with `#[job_upgrade(from = N)]` (see
    /// [`upgrade`](crate::upgrade)).
    const VERSION: u32 = 1;

    /// What the handler returns on success, stored as JSON and readable by id.
    type Output: Serialize + DeserializeOwned + Send + 'static;

    /// The defaults from the attribute.
    fn options() -> JobOptions {
        JobOptions::default()
    }

    /// The dedup key of this job, if its type is unique.
    fn unique_key(&self) -> Option<String> {
        None
    }

    /// The limits this job shares with the queue's other jobs of the same key, if its type has
    /// a `concurrency_key`.
    fn key_limits(&self) -> Option<KeyLimits> {
        None
    }

    /// How this job coalesces with an earlier one of the same key, if its type throttles or
    /// debounces.
    fn coalesce(&self) -> Option<Coalesce> {
        None
    }

    /// The JSON Schema of the payload, published to the catalog (`#[job]` derives it with
    /// schemars); `None` when the type has none.
    fn schema() -> Option<serde_json::Value> {
        None
    }

    /// The schedule of a periodic job.
    fn cron() -> Option<CronSpec> {
        None
    }

    /// The `State<T>` types the handler takes, checked when a worker starts.
    fn required_state() -> Vec<StateKey> {
        Vec::new()
    }

    /// Runs the handler.
    fn run(
        self,
        ctx: JobContext,
        state: StateMap,
    ) -> impl Future<Output = Result<Self::Output, JobError>> + Send;
}

/// The `Output` of a handler's return type: `Result<T, E>` gives `T`, `()` gives `()`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a job result",
    label = "a `#[job]` fn returns `Result<T, E>` with `E: Into<JobError>`, or nothing"
)]
pub trait IntoJobResult {
    /// The success value.
    type Output: Serialize + DeserializeOwned + Send + 'static;
    /// Converts into the handler's result.
    fn into_job_result(self) -> Result<Self::Output, JobError>;
}

impl<T, E> IntoJobResult for Result<T, E>
where
    T: Serialize + DeserializeOwned + Send + 'static,
    E: Into<JobError>,
{
    type Output = T;
    fn into_job_result(self) -> Result<T, JobError> {
        self.map_err(Into::into)
    }
}

impl IntoJobResult for () {
    type Output = ();
    fn into_job_result(self) -> Result<(), JobError> {
        Ok(())
    }
}
