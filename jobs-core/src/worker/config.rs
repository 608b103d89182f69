//! `Worker`: the builder of a worker's settings.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::any::AnyBackend;
use crate::backend::Backend;
use crate::clock::{Clock, SystemClock};
use crate::job::Job;
use crate::registry::JobType;
use crate::state::StateMap;

use super::events::{Hook, Hooks};
use super::maintenance::Retention;
use crate::event::JobEvent;

/// A worker: runs every registered job of its queues.
///
/// ```no_run
/// # async fn demo(backend: jobs_core::AnyBackend) -> Result<(), jobs_core::Error> {
/// use jobs_core::{shutdown_signal, Worker};
///
/// Worker::new(backend)
///     .queues(["email", "pdf"])
///     .concurrency(8)
///     .run_until(shutdown_signal())
///     .await
/// # }
/// ```
pub struct Worker {
    pub(crate) backend: AnyBackend,
    pub(crate) queues: Vec<String>,
    pub(crate) concurrency: usize,
    pub(crate) prefetch: Option<usize>,
    pub(crate) lease_for: Duration,
    pub(crate) poll_interval: Duration,
    pub(crate) rescue_interval: Duration,
    pub(crate) prune_interval: Duration,
    pub(crate) heartbeat_interval: Duration,
    pub(crate) grace: Duration,
    pub(crate) state: StateMap,
    pub(crate) extra_types: Vec<JobType>,
    pub(crate) retention: HashMap<String, Retention>,
    pub(crate) default_retention: Retention,
    pub(crate) hooks: Hooks,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) cron: bool,
    pub(crate) id: String,
}

impl Worker {
    /// A worker on `backend` with the defaults: the queues of every registered job,
    /// concurrency 10, a prefetch that adapts (see [`prefetch`](Worker::prefetch)), 5 s leases renewed every 5/3 s, lost
    /// jobs rescued every second (so a dead worker's jobs run again within about 6 s), a
    /// heartbeat every second, 30 s shutdown grace.
    pub fn new<B: Backend>(backend: B) -> Self {
        Worker {
            backend: AnyBackend::new(backend),
            queues: Vec::new(),
            concurrency: 10,
            prefetch: None,
            lease_for: Duration::from_secs(5),
            poll_interval: Duration::from_millis(500),
            rescue_interval: Duration::from_secs(1),
            prune_interval: Duration::from_secs(10),
            heartbeat_interval: Duration::from_secs(1),
            grace: Duration::from_secs(30),
            state: StateMap::default(),
            extra_types: Vec::new(),
            retention: HashMap::new(),
            default_retention: Retention::default(),
            hooks: Hooks::default(),
            clock: Arc::new(SystemClock),
            cron: true,
            id: format!(
                "{}-{}",
                std::process::id(),
                &uuid::Uuid::new_v4().simple().to_string()[..8]
            ),
        }
    }

    /// The queues to run (default: those of every registered job).
    pub fn queues<I, S>(mut self, queues: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.queues = queues.into_iter().map(Into::into).collect();
        self
    }

    /// How many jobs run at once (at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// How many jobs to lease beyond those running, so the next ones start without a round
    /// trip and fetches come in batches. A prefetched job waits behind those already running,
    /// so a higher-priority job enqueued meanwhile may start after up to this many others; a
    /// job prefetched by a worker that dies is rescued like a running one.
    ///
    /// By default it adapts, from as many as the concurrency up to the most one fetch asks for
    /// (the store's [`max_fetch`](crate::Backend::max_fetch): 1,024 on PostgreSQL, 256 on
    /// Redis and in memory): it doubles while the handlers finish every prefetched job before a
    /// fetch is back (fast jobs), and shrinks back while prefetched jobs wait for their turn
    /// (slow jobs), so a prefetched job waits about one fetch's round trip at most. A fetch
    /// never asks for more than `max_fetch`, whatever is set here.
    pub fn prefetch(mut self, n: usize) -> Self {
        self.prefetch = Some(n);
        self
    }

    /// How long a lease lasts unless renewed (renewed every third of it).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease_for = lease.max(Duration::from_millis(30));
        self
    }

    /// How often an idle worker looks for jobs when no wake-up came (delayed jobs become due).
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll_interval = every.max(Duration::from_millis(1));
        self
    }

    /// How often expired leases are rescued.
    pub fn rescue_interval(mut self, every: Duration) -> Self {
        self.rescue_interval = every.max(Duration::from_millis(1));
        self
    }

    /// How often finished jobs are pruned.
    pub fn prune_interval(mut self, every: Duration) -> Self {
        self.prune_interval = every.max(Duration::from_millis(1));
        self
    }

    /// How often the worker records itself in the store as alive (default 1 s), for the
    /// operations API's list of live workers; a worker missing three heartbeats in a row is no
    /// longer listed.
    pub fn heartbeat_interval(mut self, every: Duration) -> Self {
        self.heartbeat_interval = every.max(Duration::from_millis(1));
        self
    }

    /// How long running jobs may finish after shutdown begins before they are handed back.
    pub fn grace_period(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Adds a value for handlers' `State<T>` parameters.
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }

    /// Adds a value for handlers' `State<T>` parameters that the caller keeps a handle to.
    pub fn state_arc<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        self.state.insert_arc(value);
        self
    }

    /// Registers a job type by hand, beside those `#[job]` registered through inventory.
    pub fn register<J: Job>(mut self) -> Self {
        self.extra_types.push(JobType::of::<J>());
        self
    }

    /// The retention of one queue.
    pub fn retention(mut self, queue: impl Into<String>, policy: Retention) -> Self {
        self.retention.insert(queue.into(), policy);
        self
    }

    /// The retention of queues without their own.
    pub fn default_retention(mut self, policy: Retention) -> Self {
        self.default_retention = policy;
        self
    }

    /// Called after each completed job.
    pub fn on_completed(mut self, hook: impl Fn(&JobEvent) + Send + Sync + 'static) -> Self {
        self.hooks.completed.push(Arc::new(hook) as Hook);
        self
    }

    /// Called after each failed attempt (including the last).
    pub fn on_failed(mut self, hook: impl Fn(&JobEvent) + Send + Sync + 'static) -> Self {
        self.hooks.failed.push(Arc::new(hook) as Hook);
        self
    }

    /// Called when a job goes dead.
    pub fn on_dead(mut self, hook: impl Fn(&JobEvent) + Send + Sync + 'static) -> Self {
        self.hooks.dead.push(Arc::new(hook) as Hook);
        self
    }

    /// The time source (a [`ManualClock`](crate::ManualClock) in tests).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Whether this worker enqueues the cron ticks of its queues' periodic jobs (default true;
    /// any number of workers may, each tick is stored once).
    pub fn cron(mut self, enabled: bool) -> Self {
        self.cron = enabled;
        self
    }

    /// This worker's id, stored in its leases (default: pid and a random suffix).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }
}
