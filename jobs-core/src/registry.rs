//! The registry of job types: filled by `#[job]` through inventory, or by hand with `register`.

use std::any::TypeId;
use std::cmp::Ordering;
use std::future::Future;
use std::pin::Pin;

use serde_json::value::RawValue;

use crate::catalog::JobTypeInfo;
use crate::context::JobContext;
use crate::error::{ErrorKind, StartProblem};
use crate::fast_hash::HashMap;
use crate::job::{CronSpec, Job, JobOptions};
use crate::model::Json;
use crate::result_json::result_json;
use crate::state::{StateKey, StateMap};
use crate::upgrade;
use crate::JobError;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

type RunFn = fn(&RawValue, u32, JobContext, StateMap) -> BoxFuture<Result<Json, JobError>>;

/// Everything a worker needs to run one job type, with the type erased.
#[derive(Clone, Copy)]
pub struct JobType {
    /// The stable stored name.
    pub name: &'static str,
    /// The Rust type's path, for error messages.
    pub type_name: &'static str,
    /// The payload's version.
    pub version: u32,
    type_id: fn() -> TypeId,
    schema: fn() -> Option<serde_json::Value>,
    options: fn() -> JobOptions,
    cron: fn() -> Option<CronSpec>,
    required_state: fn() -> Vec<StateKey>,
    run: RunFn,
}

impl JobType {
    /// The entry of `J`.
    pub fn of<J: Job>() -> Self {
        JobType {
            name: J::NAME,
            type_name: std::any::type_name::<J>(),
            version: J::VERSION,
            type_id: TypeId::of::<J>,
            schema: J::schema,
            options: J::options,
            cron: J::cron,
            required_state: J::required_state,
            run: run_erased::<J>,
        }
    }

    /// The attribute's defaults.
    pub fn options(&self) -> JobOptions {
        (self.options)()
    }

    /// The schedule, for a periodic job.
    pub fn cron(&self) -> Option<CronSpec> {
        (self.cron)()
    }

    /// The type's entry in the catalog.
    pub fn info(&self) -> JobTypeInfo {
        type_info(self.name, self.version, self.options(), self.schema())
    }

    /// The JSON Schema of the payload, if the type has one.
    pub fn schema(&self) -> Option<serde_json::Value> {
        (self.schema)()
    }

    /// The state types the handler takes.
    pub fn required_state(&self) -> Vec<StateKey> {
        (self.required_state)()
    }

    /// Decodes the payload, stored at `version` (upgraded first when older than the type's),
    /// and runs the handler; the result comes back as JSON.
    pub fn run(
        &self,
        payload: &RawValue,
        version: u32,
        ctx: JobContext,
        state: StateMap,
    ) -> BoxFuture<Result<Json, JobError>> {
        (self.run)(payload, version, ctx, state)
    }
}

fn run_erased<J: Job>(
    payload: &RawValue,
    version: u32,
    ctx: JobContext,
    state: StateMap,
) -> BoxFuture<Result<Json, JobError>> {
    let decoded = decode::<J>(payload, version);
    Box::pin(async move {
        let job = decoded.map_err(|e| JobError::of_kind(ErrorKind::Decode, e))?;
        let output = job.run(ctx, state).await?;
        result_json(&output).map_err(|e| {
            JobError::fatal(format!(
                "result of job `{}` does not serialize: {e}",
                J::NAME
            ))
        })
    })
}

/// The job `payload` stored at `version` holds, upgraded to `J`'s version.
fn decode<J: Job>(payload: &RawValue, version: u32) -> Result<J, String> {
    let upgraded;
    let current = match version.cmp(&J::VERSION) {
        Ordering::Equal => payload,
        Ordering::Less => {
            upgraded = upgrade::upgrade(J::NAME, version, J::VERSION, payload)?;
            &*upgraded
        }
        Ordering::Greater => {
            return Err(format!(
                "payload of job `{}` is stored at version {version}, newer than this build's {}",
                J::NAME,
                J::VERSION
            ))
        }
    };
    serde_json::from_str::<J>(current.get()).map_err(|e| {
        format!(
            "payload does not deserialize as `{}` (job `{}`): {e}",
            std::any::type_name::<J>(),
            J::NAME
        )
    })
}

/// The catalog entry of a type named `name` at `version`, with its attribute's defaults.
pub(crate) fn type_info(
    name: &str,
    version: u32,
    options: JobOptions,
    schema: Option<serde_json::Value>,
) -> JobTypeInfo {
    JobTypeInfo {
        name: name.to_string(),
        version,
        queue: options.queue,
        max_attempts: options.max_attempts,
        priority: options.priority,
        backoff: options.backoff,
        timeout: options.timeout,
        tags: options.tags,
        schema,
    }
}

/// One `#[job]`'s entry in the inventory.
pub struct Registration(fn() -> JobType);

impl Registration {
    /// The entry of `J`, as `#[job]` submits it.
    pub const fn of<J: Job>() -> Self {
        Registration(JobType::of::<J>)
    }
}

inventory::collect!(Registration);

/// Every job type registered through `#[job]` in the binary.
pub fn registered() -> Vec<JobType> {
    inventory::iter::<Registration>
        .into_iter()
        .map(|r| (r.0)())
        .collect()
}

/// Builds the name → type map; each stored name that two different types share is a problem.
pub(crate) fn index(
    types: impl IntoIterator<Item = JobType>,
) -> (HashMap<String, JobType>, Vec<StartProblem>) {
    let mut by_name: HashMap<String, JobType> = HashMap::default();
    let mut problems = Vec::new();
    for job in types {
        match by_name.get(job.name) {
            Some(existing) if (existing.type_id)() != (job.type_id)() => {
                problems.push(StartProblem::DuplicateName {
                    name: job.name.to_string(),
                    first: existing.type_name.to_string(),
                    second: job.type_name.to_string(),
                });
            }
            Some(_) => {}
            None => {
                by_name.insert(job.name.to_string(), job);
            }
        }
    }
    (by_name, problems)
}
