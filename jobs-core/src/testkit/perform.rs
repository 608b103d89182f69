//! `perform`: one handler run as a worker would run it, with a real context, in a test.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::any::AnyBackend;
use crate::backend::{Backend, EnqueueParams, FetchParams};
use crate::clock::{Clock, SystemClock};
use crate::context::JobContext;
use crate::enqueue::Enqueue;
use crate::job::Job;
use crate::memory::MemoryBackend;
use crate::registry::JobType;
use crate::state::StateMap;
use crate::JobError;

/// Runs `job`'s handler once: the job is stored in a fresh [`MemoryBackend`], leased and
/// decoded as a worker would, and run with a real [`JobContext`] (its progress is recorded).
/// Add state with [`Perform::state`].
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// # use jobs_core::{Job, JobContext, JobError, StateMap};
/// # #[derive(serde::Serialize, serde::Deserialize)]
/// # struct Greet { name: String }
/// # struct Greeting { text: &'static str }
/// # impl Job for Greet {
/// #     const NAME: &'static str = "perform_doc_greet";
/// #     type Output = String;
/// #     async fn run(self, _: JobContext, state: StateMap) -> Result<String, JobError> {
/// #         Ok(format!("{} {}", state.require::<Greeting>()?.text, self.name))
/// #     }
/// # }
/// let out = jobs_core::testkit::perform(Greet { name: "Ada".into() })
///     .state(Greeting { text: "hello" })
///     .await;
/// assert_eq!(out.unwrap(), "hello Ada");
/// # });
/// ```
pub fn perform<J: Job>(job: J) -> Perform<J> {
    Perform {
        job: Source::Job(job),
        state: StateMap::default(),
    }
}

/// Runs `J`'s handler once on `payload` as a release stored it at `version`: the way to test
/// an upgrade (`#[job_upgrade]`), since the worker upgrades the payload first, as it would a
/// job left in the store by an older release. Otherwise as [`perform`].
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// # use jobs_core::{Job, JobContext, JobError, StateMap};
/// # #[derive(serde::Serialize, serde::Deserialize)]
/// # struct Greet { name: String }
/// # impl Job for Greet {
/// #     const NAME: &'static str = "perform_stored_doc_greet";
/// #     type Output = String;
/// #     async fn run(self, _: JobContext, _: StateMap) -> Result<String, JobError> {
/// #         Ok(format!("hello {}", self.name))
/// #     }
/// # }
/// let stored = serde_json::json!({ "name": "Ada" });
/// let out = jobs_core::testkit::perform_stored::<Greet>(stored, 1).await;
/// assert_eq!(out.unwrap(), "hello Ada");
/// # });
/// ```
pub fn perform_stored<J: Job>(payload: serde_json::Value, version: u32) -> Perform<J> {
    Perform {
        job: Source::Stored { payload, version },
        state: StateMap::default(),
    }
}

/// A handler run being set up; `.await` it to run.
#[must_use = "the handler only runs when awaited"]
pub struct Perform<J: Job> {
    job: Source<J>,
    state: StateMap,
}

/// What the run starts from.
enum Source<J> {
    /// A job of this build.
    Job(J),
    /// A payload as an older (or this) release stored it.
    Stored {
        payload: serde_json::Value,
        version: u32,
    },
}

impl<J: Job> Perform<J> {
    /// Adds a value for the handler's `State<T>` parameters.
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }

    /// Adds a value for the handler's `State<T>` parameters that the test keeps a handle to.
    pub fn state_arc<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        self.state.insert_arc(value);
        self
    }

    async fn run(self) -> Result<J::Output, JobError> {
        let backend = MemoryBackend::new();
        let now = SystemClock.now();
        let mut new_job = match self.job {
            Source::Job(job) => Enqueue::from(job).to_new_job(now)?,
            Source::Stored { payload, version } => {
                let info = JobType::of::<J>().info();
                let mut new_job = info.new_job(serde_json::value::to_raw_value(&payload)?, now);
                new_job.version = version;
                new_job
            }
        };
        new_job.run_at = now;
        let queue = new_job.queue.clone();
        backend
            .enqueue(EnqueueParams {
                jobs: vec![new_job],
                now,
            })
            .await?;
        let leased = backend
            .fetch(FetchParams {
                ended: Vec::new(),
                known: None,
                queues: vec![queue],
                limit: 1,
                worker: "testkit".into(),
                lease_for: Duration::from_secs(3600),
                now,
                flow: Vec::new(),
                reserve: 0,
                deliver: 0,
            })
            .await?
            .pop()
            .ok_or_else(|| JobError::fatal("the job was not stored"))?;
        let ctx = JobContext::new(AnyBackend::new(backend), &leased);
        let output = JobType::of::<J>()
            .run(
                &leased.record.payload,
                leased.record.version,
                ctx,
                self.state,
            )
            .await?;
        Ok(serde_json::from_str(output.get())?)
    }
}

impl<J: Job> IntoFuture for Perform<J> {
    type Output = Result<J::Output, JobError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}
