//! Enqueueing typed jobs: the `Producer` a job is enqueued through, per-call overrides, and the
//! typed handle that reads the job back.

use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

use crate::backend::{Backend, EnqueueParams, EventsParams, ReadParams};
use crate::backoff::Backoff;
use crate::clock::{self, Clock, SystemClock};
use crate::event::{EventKind, EventStream, JobEvent, Received};
use crate::flow::{Coalesce, KeyLimits};
use crate::job::Job;
use crate::model::{Enqueued, JobId, JobRecord, JobStatus, NewJob, Timestamp};
use crate::Error;

/// Something jobs can be enqueued through and read back from: `&B` for every [`Backend`], and
/// backend-specific handles such as a Postgres pool or transaction.
///
/// `M` only tells the implementations apart (so a backend crate can implement this for a driver
/// type); it is always inferred.
#[diagnostic::on_unimplemented(
    message = "jobs cannot be enqueued through `{Self}`",
    label = "not a backend, pool or transaction",
    note = "enqueue through `&backend`, `&pool` or `&mut *tx` (Postgres)"
)]
pub trait Producer<M>: Send {
    /// Stores the jobs; `now` decides which are delayed.
    fn enqueue_jobs(
        self,
        jobs: Vec<NewJob>,
        now: Timestamp,
    ) -> impl Future<Output = Result<Vec<Enqueued>, Error>> + Send;
    /// Reads one job.
    fn read_job(self, id: JobId) -> impl Future<Output = Result<Option<JobRecord>, Error>> + Send;

    /// The job events of every queue, where this producer can subscribe to them (a backend
    /// can); `None` otherwise, and [`JobHandle::wait`] polls.
    fn job_events(self) -> impl Future<Output = Option<EventStream>> + Send
    where
        Self: Sized,
    {
        std::future::ready(None)
    }
}

/// How often [`JobHandle::wait`] reads the job again while waiting for its events.
pub const WAIT_CHECK: Duration = Duration::from_secs(5);

/// The [`Producer`] marker of backends themselves.
#[doc(hidden)]
pub enum ViaBackend {}

impl<B: Backend + ?Sized> Producer<ViaBackend> for &B {
    async fn enqueue_jobs(self, jobs: Vec<NewJob>, now: Timestamp) -> Result<Vec<Enqueued>, Error> {
        if !self.events_heard() {
            return self.enqueue(EnqueueParams { jobs, now }).await;
        }
        let events: Vec<JobEvent> = jobs
            .iter()
            .map(|job| {
                JobEvent::new(
                    job.id,
                    job.name.as_str(),
                    job.queue.as_str(),
                    EventKind::Enqueued,
                    0,
                    now,
                )
            })
            .collect();
        let stored = self.enqueue(EnqueueParams { jobs, now }).await?;
        let new = events
            .into_iter()
            .zip(&stored)
            .filter(|(_, stored)| !stored.duplicate)
            .map(|(event, _)| event);
        self.publish(new.collect());
        Ok(stored)
    }

    fn read_job(self, id: JobId) -> impl Future<Output = Result<Option<JobRecord>, Error>> + Send {
        self.read(ReadParams { id })
    }

    async fn job_events(self) -> Option<EventStream> {
        match self.events(EventsParams::default()).await {
            Ok(stream) => Some(stream),
            Err(e) => {
                tracing::warn!(error = %e, "cannot subscribe to job events; polling instead");
                None
            }
        }
    }
}

/// A job with per-call overrides of its attribute's defaults, ready to enqueue.
#[derive(Clone, Debug)]
#[must_use = "a job is only stored by `.enqueue(..)`"]
pub struct Enqueue<J: Job> {
    job: J,
    queue: Option<String>,
    priority: Option<i16>,
    run_at: Option<Timestamp>,
    delay: Option<Duration>,
    max_attempts: Option<u32>,
    backoff: Option<Backoff>,
    timeout: Option<Duration>,
    unique_key: Option<String>,
    trace_context: Option<String>,
    tags: Vec<String>,
    key_limits: Option<KeyLimits>,
    coalesce: Option<Coalesce>,
}

impl<J: Job> From<J> for Enqueue<J> {
    fn from(job: J) -> Self {
        Enqueue {
            job,
            queue: None,
            priority: None,
            run_at: None,
            delay: None,
            max_attempts: None,
            backoff: None,
            timeout: None,
            unique_key: None,
            trace_context: None,
            tags: Vec::new(),
            key_limits: None,
            coalesce: None,
        }
    }
}

/// Writes each per-call override once, as a method of [`Enqueue`] and as the [`JobExt`] method
/// that starts an `Enqueue` from a bare job.
macro_rules! overrides {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),+) => |$e:ident| $set:expr;)*) => {
        impl<J: Job> Enqueue<J> {
            $(
                $(#[$doc])*
                pub fn $name(mut self, $($arg: $ty),+) -> Self {
                    let $e = &mut self;
                    $set;
                    self
                }
            )*
        }

        /// Enqueueing for every [`Job`]: `job.enqueue(&backend)`, or overrides first:
        /// `job.priority(1).delay(d).enqueue(&backend)`.
        pub trait JobExt: Job + Sized {
            /// Stores the job with its attribute's defaults.
            fn enqueue<M, P: Producer<M>>(
                self,
                producer: P,
            ) -> impl Future<Output = Result<JobHandle<Self>, Error>> + Send {
                Enqueue::from(self).enqueue(producer)
            }

            /// Stores the job, waiting up to `deadline` for room while its queue is full (see
            /// [`Enqueue::enqueue_within`]).
            fn enqueue_within<M, P: Producer<M> + Copy>(
                self,
                producer: P,
                deadline: Duration,
            ) -> impl Future<Output = Result<JobHandle<Self>, Error>> + Send {
                Enqueue::from(self).enqueue_within(producer, deadline)
            }

            /// Stores many jobs in one batch (one statement or script where the backend allows).
            fn enqueue_many<M, P: Producer<M>>(
                producer: P,
                jobs: impl IntoIterator<Item = impl Into<Enqueue<Self>>>,
            ) -> impl Future<Output = Result<Vec<JobHandle<Self>>, Error>> + Send {
                let now = SystemClock.now();
                // Sized up front: collecting results into a Vec grows it by doubling, moving
                // every job built so far each time.
                let jobs = jobs.into_iter();
                let mut built = Vec::with_capacity(jobs.size_hint().0);
                let built: Result<Vec<NewJob>, Error> = jobs
                    .map(|job| job.into().to_new_job(now))
                    .try_for_each(|job| job.map(|job| built.push(job)))
                    .map(|()| built);
                async move {
                    let built = built?;
                    #[cfg(feature = "metrics")]
                    let counting = crate::metrics::EnqueueCount::of(Self::NAME, &built);
                    let stored = store(producer, built, now).await?;
                    #[cfg(feature = "metrics")]
                    counting.stored(&stored);
                    Ok(stored.into_iter().map(JobHandle::new).collect())
                }
            }

            $(
                $(#[$doc])*
                fn $name(self, $($arg: $ty),+) -> Enqueue<Self> {
                    Enqueue::from(self).$name($($arg),+)
                }
            )*
        }
    };
}

overrides! {
    /// Runs in another queue than the attribute's.
    fn queue(queue: impl Into<String>) => |e| e.queue = Some(queue.into());
    /// Lower runs first.
    fn priority(priority: i16) => |e| e.priority = Some(priority);
    /// Not run before `delay` from now (or from [`run_at`](Enqueue::run_at) when both are set).
    fn delay(delay: Duration) => |e| e.delay = Some(delay);
    /// Not run before `at`.
    fn run_at(at: Timestamp) => |e| e.run_at = Some(at);
    /// Attempts before dead (at least 1).
    fn attempts(attempts: u32) => |e| e.max_attempts = Some(attempts);
    /// The delay before each retry.
    fn backoff(backoff: Backoff) => |e| e.backoff = Some(backoff);
    /// How long one attempt may run.
    fn timeout(timeout: Duration) => |e| e.timeout = Some(timeout);
    /// Deduplicates on `key`: while a job with it is active in the queue, enqueue returns that
    /// job.
    fn unique(key: impl Into<String>) => |e| e.unique_key = Some(key.into());
    /// Carries the caller's trace context (such as a W3C `traceparent`) into the job's span.
    fn trace_context(context: impl Into<String>) => |e| e.trace_context = Some(context.into());
    /// Adds a tag to find the job by (`"order:42"`), besides the attribute's `tags`.
    fn tag(tag: impl Into<String>) => |e| e.tags.push(tag.into());
    /// Shares `limits` with the queue's other jobs of the same key, in place of the
    /// attribute's `concurrency_key`.
    fn with_key_limits(limits: KeyLimits) => |e| e.key_limits = Some(limits);
    /// Keeps only the first job of each `window` with `key` in the queue: within it, enqueue
    /// stores nothing and returns that job (see [`Coalesce::Throttle`]).
    fn throttle(key: impl Into<String>, window: Duration) => |e| e.coalesce = Some(Coalesce::Throttle { key: key.into(), window });
    /// Runs the job `window` after the last enqueue with `key`: while one is waiting, enqueue
    /// replaces its payload and pushes it back (see [`Coalesce::Debounce`]).
    fn debounce(key: impl Into<String>, window: Duration) => |e| e.coalesce = Some(Coalesce::Debounce { key: key.into(), window });
}

impl<J: Job> Enqueue<J> {
    /// The job as a backend stores it, with `now` for its delay (backend SPI).
    #[doc(hidden)]
    pub fn to_new_job(&self, now: Timestamp) -> Result<NewJob, Error> {
        let defaults = J::options();
        let max_attempts = self.max_attempts.unwrap_or(defaults.max_attempts);
        if max_attempts == 0 {
            return Err(Error::Invalid(format!(
                "job `{}`: attempts must be at least 1",
                J::NAME
            )));
        }
        let run_at = match (self.run_at, self.delay) {
            (Some(at), Some(delay)) => clock::later(at, delay),
            (Some(at), None) => at,
            (None, Some(delay)) => clock::later(now, delay),
            (None, None) => now,
        };
        let key_limits = self
            .key_limits
            .clone()
            .or_else(|| Job::key_limits(&self.job));
        if let Some(limits) = &key_limits {
            limits.validate()?;
        }
        let coalesce = self.coalesce.clone().or_else(|| Job::coalesce(&self.job));
        // A debounced job runs `window` after its (latest) enqueue.
        let run_at = match &coalesce {
            Some(Coalesce::Debounce { window, .. }) => run_at.max(clock::later(now, *window)),
            _ => run_at,
        };
        let mut tags = defaults.tags;
        for tag in &self.tags {
            if !tags.contains(tag) {
                tags.push(tag.clone());
            }
        }
        Ok(NewJob {
            id: JobId::new(),
            name: J::NAME.to_string(),
            queue: self.queue.clone().unwrap_or(defaults.queue),
            payload: serde_json::value::to_raw_value(&self.job)?,
            version: J::VERSION,
            priority: self.priority.unwrap_or(defaults.priority),
            run_at,
            max_attempts,
            backoff: self.backoff.unwrap_or(defaults.backoff),
            timeout: self.timeout.or(defaults.timeout),
            unique_key: self
                .unique_key
                .clone()
                .or_else(|| Job::unique_key(&self.job)),
            trace_context: self.trace_context.clone(),
            tags,
            key_limits,
            coalesce,
            step: None,
        })
    }

    /// Stores the job; returns its typed handle.
    pub async fn enqueue<M, P: Producer<M>>(self, producer: P) -> Result<JobHandle<J>, Error> {
        let new_job = self.to_new_job(SystemClock.now())?;
        Self::store_one(producer, new_job).await
    }

    /// Stores the job, waiting up to `deadline` for room while its queue is full (see
    /// [`QueueLimits::max_depth`](crate::QueueLimits::max_depth)): it tries again, a little
    /// later each time (10 ms, doubling to 200 ms), and answers [`Error::QueueFull`] only when a
    /// last try at the deadline finds no room either. Every other error is answered at once.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use jobs_core::{Backend, JobExt, MemoryBackend, QueueLimits, SetLimitsParams};
    /// # #[derive(serde::Serialize, serde::Deserialize)] struct Report;
    /// # impl jobs_core::Job for Report {
    /// #     const NAME: &'static str = "report";
    /// #     type Output = ();
    /// #     async fn run(self, _: jobs_core::JobContext, _: jobs_core::StateMap) -> Result<(), jobs_core::JobError> { Ok(()) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let backend = MemoryBackend::new();
    /// let limits = QueueLimits::default().max_depth(1);
    /// backend.set_limits(SetLimitsParams { queue: "default".into(), limits }).await?;
    /// Report.enqueue(&backend).await?;
    /// let full = Report.enqueue_within(&backend, Duration::from_millis(50)).await;
    /// assert!(matches!(full, Err(jobs_core::Error::QueueFull { max_depth: 1, .. })));
    /// # Ok::<(), jobs_core::Error>(()) }).unwrap();
    /// ```
    pub async fn enqueue_within<M, P: Producer<M> + Copy>(
        self,
        producer: P,
        deadline: Duration,
    ) -> Result<JobHandle<J>, Error> {
        let until = tokio::time::Instant::now() + deadline;
        let new_job = self.to_new_job(SystemClock.now())?;
        let mut pause = ROOM_CHECK_FIRST;
        loop {
            let stored = Enqueue::<J>::store_one(producer, new_job.clone()).await;
            let now = tokio::time::Instant::now();
            match stored {
                Err(Error::QueueFull { .. }) if now < until => {
                    tokio::time::sleep(pause.min(until - now)).await;
                    pause = (pause * 2).min(ROOM_CHECK_MAX);
                }
                other => return other,
            }
        }
    }

    /// Stores one built job; the time it is stored at is now.
    async fn store_one<M, P: Producer<M>>(producer: P, job: NewJob) -> Result<JobHandle<J>, Error> {
        let new_job = vec![job];
        #[cfg(feature = "metrics")]
        let counting = crate::metrics::EnqueueCount::of(J::NAME, &new_job);
        let stored = store(producer, new_job, SystemClock.now()).await?;
        #[cfg(feature = "metrics")]
        counting.stored(&stored);
        let first = stored
            .into_iter()
            .next()
            .ok_or_else(|| Error::backend("the backend stored no job"))?;
        Ok(JobHandle::new(first))
    }
}

/// The first wait of [`Enqueue::enqueue_within`] for room in a full queue.
const ROOM_CHECK_FIRST: Duration = Duration::from_millis(10);
/// Its longest wait between two tries.
const ROOM_CHECK_MAX: Duration = Duration::from_millis(200);

impl<J: Job> JobExt for J {}

/// Stores `jobs` through `producer`; with the `otel` feature, within a producer span whose trace
/// context the jobs carry (see [`otel`](crate::otel)).
pub(crate) async fn store<M, P: Producer<M>>(
    producer: P,
    jobs: Vec<NewJob>,
    now: Timestamp,
) -> Result<Vec<Enqueued>, Error> {
    #[cfg(feature = "otel")]
    {
        use tracing::Instrument;
        let mut jobs = jobs;
        let queue = jobs.first().map_or("", |j| j.queue.as_str());
        let span = crate::otel::send_span(queue, jobs.len());
        if let Some(traceparent) = crate::otel::traceparent(&span) {
            for job in &mut jobs {
                job.trace_context.get_or_insert_with(|| traceparent.clone());
            }
        }
        producer.enqueue_jobs(jobs, now).instrument(span).await
    }
    #[cfg(not(feature = "otel"))]
    producer.enqueue_jobs(jobs, now).await
}

/// A typed reference to an enqueued job: read its status, or await its typed result.
#[derive(Debug)]
pub struct JobHandle<J: Job> {
    id: JobId,
    duplicate: bool,
    _job: PhantomData<fn() -> J>,
}

impl<J: Job> Clone for JobHandle<J> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<J: Job> Copy for JobHandle<J> {}

impl<J: Job> JobHandle<J> {
    fn new(stored: Enqueued) -> Self {
        JobHandle {
            id: stored.id,
            duplicate: stored.duplicate,
            _job: PhantomData,
        }
    }

    /// A handle to a job known by id (say, from an HTTP request).
    pub fn from_id(id: JobId) -> Self {
        JobHandle {
            id,
            duplicate: false,
            _job: PhantomData,
        }
    }

    /// The job's id.
    pub fn id(&self) -> JobId {
        self.id
    }

    /// True when a unique key matched an active job: this handle is that job's.
    pub fn is_duplicate(&self) -> bool {
        self.duplicate
    }

    /// The stored record.
    pub async fn record<M, P: Producer<M>>(&self, producer: P) -> Result<JobRecord, Error> {
        producer
            .read_job(self.id)
            .await?
            .ok_or(Error::NotFound(self.id))
    }

    /// The job's status.
    pub async fn status<M, P: Producer<M>>(&self, producer: P) -> Result<JobStatus, Error> {
        Ok(self.record(producer).await?.status)
    }

    /// The typed result: `None` while the job has not completed; an error if it ended dead or
    /// cancelled.
    pub async fn result<M, P: Producer<M>>(&self, producer: P) -> Result<Option<J::Output>, Error> {
        let record = self.record(producer).await?;
        Self::outcome(record)
    }

    /// Waits until the job finishes and returns its typed result.
    ///
    /// Through a backend, it waits for the job's events (reading the job again when it
    /// completes or dies, when events may have been missed, and every [`WAIT_CHECK`] in case
    /// its worker died between writing the outcome and publishing it); through a producer that
    /// cannot subscribe (a Postgres pool or transaction), it polls with a growing interval
    /// (1 ms up to 250 ms).
    pub async fn wait<M, P>(&self, producer: P) -> Result<J::Output, Error>
    where
        P: Producer<M> + Copy,
    {
        // Subscribed before the first read, so an outcome in between is not missed.
        let Some(mut events) = producer.job_events().await else {
            return self.poll(producer).await;
        };
        // Publishers learn of a new subscriber within 200 ms: read again soon after subscribing.
        let mut check = Duration::from_millis(250);
        loop {
            if let Some(output) = self.result(producer).await? {
                return Ok(output);
            }
            let finished = async {
                loop {
                    match events.recv().await {
                        Some(Received::Event(e)) if e.id == self.id && e.kind.is_final() => {
                            return true
                        }
                        Some(Received::Event(_)) => {}
                        Some(Received::Missed) => return true,
                        None => return false,
                    }
                }
            };
            if let Ok(false) = tokio::time::timeout(check, finished).await {
                return self.poll(producer).await;
            }
            check = WAIT_CHECK;
        }
    }

    /// Polls until the job finishes, with a growing interval (1 ms up to 250 ms).
    async fn poll<M, P>(&self, producer: P) -> Result<J::Output, Error>
    where
        P: Producer<M> + Copy,
    {
        let mut pause = Duration::from_millis(1);
        loop {
            if let Some(output) = self.result(producer).await? {
                return Ok(output);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(250));
        }
    }

    fn outcome(record: JobRecord) -> Result<Option<J::Output>, Error> {
        match record.status {
            JobStatus::Completed => {
                let result = record
                    .result
                    .ok_or_else(|| Error::backend("completed job has no stored result"))?;
                Ok(Some(serde_json::from_str(result.get())?))
            }
            JobStatus::Dead | JobStatus::Cancelled => Err(Error::JobEnded {
                id: record.id,
                status: record.status,
                last_error: record.errors.last().map(|e| e.message.clone()),
            }),
            _ => Ok(None),
        }
    }
}
