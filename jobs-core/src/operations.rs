//! The operations an application or an operator calls on any backend: list and read jobs,
//! retry, cancel and delete them one by one or by filter, purge, and see the queues, the cron
//! schedules and the live workers. The CLI and the dashboard are built on them too.
//!
//! Each is a method of [`Operations`], which every [`Backend`] implements: no clock and no
//! params struct in the caller's hands; bulk operations run in the store, a bounded batch per
//! call.

use std::collections::HashMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::backend::*;
use crate::by_name;
use crate::catalog::PublishedType;
use crate::clock::{Clock, SystemClock};
use crate::cron::Schedule;
use crate::event::EventStream;
use crate::filter::JobFilter;
use crate::flow::QueueLimits;
use crate::model::{Enqueued, JobId, JobRecord, JobStatus, QueueCounts, Timestamp};
use crate::presence::{ScheduleInfo, WorkerInfo};
use crate::workflow::{WorkflowId, WorkflowStatus};
use crate::Error;

/// Jobs per page when a [`PageRequest`] names no limit.
pub const DEFAULT_PAGE_SIZE: usize = 50;
/// The most jobs one page holds.
const MAX_PAGE_SIZE: usize = 1_000;
/// Jobs a bulk operation examines per store call.
const BULK_BATCH: usize = 500;
/// Next ticks shown per schedule.
const NEXT_TICKS: usize = 3;
/// The most running jobs read to tell what each worker runs.
const MAX_RUNNING: usize = 10_000;
/// The oldest pending jobs of each queue examined for stranded ones.
pub const STRANDED_SCAN: usize = 1_000;

/// Which page of a list: after a cursor, at most `limit` jobs.
///
/// ```
/// use jobs_core::{PageRequest, DEFAULT_PAGE_SIZE};
///
/// assert_eq!(PageRequest::default().limit, DEFAULT_PAGE_SIZE);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRequest {
    /// Only jobs after this id: the previous page's [`Page::next`].
    pub after: Option<JobId>,
    /// At most this many jobs (capped at 1,000).
    pub limit: usize,
}

impl Default for PageRequest {
    fn default() -> Self {
        PageRequest {
            after: None,
            limit: DEFAULT_PAGE_SIZE,
        }
    }
}

impl PageRequest {
    /// The page after `cursor`.
    pub fn after(cursor: JobId) -> Self {
        PageRequest {
            after: Some(cursor),
            ..Self::default()
        }
    }

    /// At most `limit` jobs (capped at 1,000).
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
}

/// One page of jobs, oldest first.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Page {
    /// The jobs.
    pub jobs: Vec<JobRecord>,
    /// The cursor of the next page; `None` on the last.
    pub next: Option<JobId>,
}

/// A queue and its jobs' counts by status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueSummary {
    /// The queue.
    pub name: String,
    /// Its jobs by status.
    pub counts: QueueCounts,
    /// Whether it is paused (see [`Operations::pause_queue`]).
    pub paused: bool,
    /// Its jobs finished (completed or cancelled) in the last minute.
    pub finished_last_minute: u64,
    /// Its flow limits (see [`Operations::set_queue_limits`]).
    pub limits: QueueLimits,
}

/// A cron schedule with its last stored tick and its next ones.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleSummary {
    /// The schedule as workers recorded it.
    pub schedule: ScheduleInfo,
    /// The latest tick stored.
    pub last_tick: Option<Timestamp>,
    /// The next ticks from now.
    pub next: Vec<Timestamp>,
    /// When a worker last recorded it.
    pub seen_at: Timestamp,
}

/// A live worker and the jobs it is running.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerSummary {
    /// The worker as its heartbeats record it.
    pub worker: WorkerInfo,
    /// The jobs it holds leases on, oldest first.
    pub running: Vec<JobId>,
}

/// Waiting jobs of one name that no live worker can run: none of the workers serving their
/// queue knows the name (an older release's workers during a deploy, say, or no worker at all).
/// They wait, spending no attempt, until a worker that knows the name starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stranded {
    /// The queue.
    pub queue: String,
    /// The job name no live worker of the queue runs.
    pub name: String,
    /// How many of the queue's oldest [`STRANDED_SCAN`] pending jobs have the name.
    pub jobs: u64,
    /// The oldest of them.
    pub oldest: JobId,
    /// When the oldest was created.
    pub since: Timestamp,
}

/// Operations on the jobs of any backend.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use jobs_core::{JobFilter, JobStatus, MemoryBackend, Operations, PageRequest};
///
/// let backend = MemoryBackend::new();
/// let dead = JobFilter::new().queue("email").status(JobStatus::Dead);
/// let page = backend.jobs(&dead, PageRequest::default()).await?;
/// assert!(page.jobs.is_empty() && page.next.is_none());
/// assert_eq!(backend.retry_all(&dead).await?, 0);
/// # Ok::<(), jobs_core::Error>(()) }).unwrap();
/// ```
#[async_trait]
pub trait Operations {
    /// Every queue with its counts, paused state and last minute's throughput, by name
    /// (a paused queue is listed even while it holds no jobs).
    async fn queues(&self) -> Result<Vec<QueueSummary>, Error>;

    /// Pauses `queue`: workers in every process take none of its jobs from within a second
    /// (running ones finish), until [`resume_queue`](Operations::resume_queue). Kept in the store, so it
    /// holds across restarts.
    async fn pause_queue(&self, queue: &str) -> Result<(), Error>;

    /// Resumes a paused queue.
    async fn resume_queue(&self, queue: &str) -> Result<(), Error>;

    /// Sets `queue`'s flow limits, replacing any it had (`QueueLimits::default()` removes
    /// them): at most so many running at once and starting per period across every worker
    /// process (from within a second), and at most so many waiting. Kept in the store.
    /// [`Error::Invalid`] for a concurrency or rate limit of 0.
    async fn set_queue_limits(&self, queue: &str, limits: QueueLimits) -> Result<(), Error>;

    /// A page of the jobs matching `filter`, oldest first.
    async fn jobs(&self, filter: &JobFilter, page: PageRequest) -> Result<Page, Error>;

    /// One job; [`Error::NotFound`] if there is none.
    async fn job(&self, id: JobId) -> Result<JobRecord, Error>;

    /// Puts a dead or cancelled job back to pending, due now, with fresh attempts.
    ///
    /// Fails with [`Error::NotFound`], [`Error::WrongStatus`] for a job in another status, or
    /// [`Error::UniqueKeyHeld`] when another active job holds its unique key.
    async fn retry(&self, id: JobId) -> Result<(), Error>;

    /// Cancels a scheduled, pending or running job (a running job's lease is revoked, so its
    /// worker stops it). Fails with [`Error::NotFound`] or [`Error::WrongStatus`].
    async fn cancel(&self, id: JobId) -> Result<(), Error>;

    /// Deletes a job for good. Fails with [`Error::NotFound`].
    async fn delete(&self, id: JobId) -> Result<(), Error>;

    /// Retries every dead or cancelled job matching `filter`; returns how many. Jobs whose
    /// unique key another active job holds are left dead.
    async fn retry_all(&self, filter: &JobFilter) -> Result<u64, Error>;

    /// Cancels every active job matching `filter`; returns how many.
    async fn cancel_all(&self, filter: &JobFilter) -> Result<u64, Error>;

    /// Deletes every job matching `filter`; returns how many.
    async fn delete_all(&self, filter: &JobFilter) -> Result<u64, Error>;

    /// Deletes the jobs in the finished `status` (completed, dead or cancelled) that finished
    /// before `before`; returns how many.
    async fn purge(&self, status: JobStatus, before: Timestamp) -> Result<u64, Error>;

    /// The cron schedules workers recorded, with their last and next ticks.
    async fn schedules(&self) -> Result<Vec<ScheduleSummary>, Error>;

    /// The live worker processes and the jobs each is running.
    async fn workers(&self) -> Result<Vec<WorkerSummary>, Error>;

    /// Pending jobs that no live worker can run, by queue and name: those whose name none of
    /// the workers serving their queue knows. Such jobs are never fetched, so they are the
    /// oldest pending ones; each queue's oldest [`STRANDED_SCAN`] pending jobs are examined.
    async fn stranded(&self) -> Result<Vec<Stranded>, Error>;

    /// The events of the jobs of `queues` (of every queue when empty), published by any
    /// process from now on: enqueued, started, progress, completed, failed, dead.
    async fn job_events(&self, queues: &[&str]) -> Result<EventStream, Error>;

    /// The catalog: every version of every job type that workers published (name, version,
    /// defaults, payload schema), by name then version.
    async fn catalog(&self) -> Result<Vec<PublishedType>, Error>;

    /// The newest published version of the job type `name`; [`Error::UnknownJobType`] when
    /// none is.
    async fn job_type(&self, name: &str) -> Result<PublishedType, Error>;

    /// Enqueues a job of the type `name`, as its newest published version, with a JSON
    /// payload and the type's defaults, due now. The payload is checked against the type's
    /// schema first: [`Error::InvalidPayload`] lists every way it does not match, and nothing
    /// is stored; [`Error::UnknownJobType`] when no worker published the type.
    async fn enqueue_json(&self, name: &str, payload: serde_json::Value)
        -> Result<Enqueued, Error>;

    /// The workflow `id`: its state and each step's job (status, progress, result, errors);
    /// [`Error::WorkflowNotFound`] when none of its steps is stored.
    async fn workflow(&self, id: WorkflowId) -> Result<WorkflowStatus, Error>;

    /// Cancels every step of workflow `id` that has not finished (compensations included; a
    /// running step is told to stop), and returns how many. Cancelling one step by hand
    /// cancels only that job, and the steps after it keep waiting.
    async fn cancel_workflow(&self, id: WorkflowId) -> Result<u64, Error>;
}

#[async_trait]
impl<B: Backend + ?Sized> Operations for B {
    async fn queues(&self) -> Result<Vec<QueueSummary>, Error> {
        let paused = self.paused_queues(PausedParams {}).await?;
        let limits: HashMap<String, QueueLimits> = self
            .flow(FlowParams {})
            .await?
            .into_iter()
            .filter(|f| f.limits.is_limited())
            .map(|f| (f.queue, f.limits))
            .collect();
        let mut names = self.queue_names(QueueNamesParams {}).await?;
        names.extend(paused.iter().cloned());
        names.extend(limits.keys().cloned());
        names.sort_unstable();
        names.dedup();
        let minute_ago = SystemClock.now() - chrono::Duration::seconds(60);
        let mut queues = Vec::with_capacity(names.len());
        for name in names {
            let counts = self
                .counts(CountsParams {
                    queue: name.clone(),
                })
                .await?;
            let finished_last_minute = self
                .finished_since(FinishedParams {
                    queue: name.clone(),
                    since: minute_ago,
                })
                .await?;
            queues.push(QueueSummary {
                paused: paused.contains(&name),
                limits: limits.get(&name).copied().unwrap_or_default(),
                name,
                counts,
                finished_last_minute,
            });
        }
        Ok(queues)
    }

    async fn pause_queue(&self, queue: &str) -> Result<(), Error> {
        let queue = queue.to_string();
        Backend::pause(
            self,
            PauseParams {
                queue,
                paused: true,
            },
        )
        .await
    }

    async fn resume_queue(&self, queue: &str) -> Result<(), Error> {
        let queue = queue.to_string();
        Backend::pause(
            self,
            PauseParams {
                queue,
                paused: false,
            },
        )
        .await
    }

    async fn set_queue_limits(&self, queue: &str, limits: QueueLimits) -> Result<(), Error> {
        limits.validate()?;
        let queue = queue.to_string();
        self.set_limits(SetLimitsParams { queue, limits }).await
    }

    async fn jobs(&self, filter: &JobFilter, page: PageRequest) -> Result<Page, Error> {
        let limit = page.limit.clamp(1, MAX_PAGE_SIZE);
        let mut jobs = self
            .list(ListParams {
                filter: filter.clone(),
                after: page.after,
                limit: limit + 1,
            })
            .await?;
        let next = if jobs.len() > limit {
            jobs.truncate(limit);
            jobs.last().map(|j| j.id)
        } else {
            None
        };
        Ok(Page { jobs, next })
    }

    async fn job(&self, id: JobId) -> Result<JobRecord, Error> {
        self.read(ReadParams { id })
            .await?
            .ok_or(Error::NotFound(id))
    }

    async fn retry(&self, id: JobId) -> Result<(), Error> {
        let managed = manage_one(self, Action::Retry, id).await?;
        if let Some(held) = managed.held.into_iter().next() {
            return Err(Error::UniqueKeyHeld {
                job: held.job,
                key: held.key,
                holder: held.holder,
            });
        }
        if managed.changed.is_empty() {
            return Err(refusal(self, id, "retry").await);
        }
        Ok(())
    }

    async fn cancel(&self, id: JobId) -> Result<(), Error> {
        if manage_one(self, Action::Cancel, id)
            .await?
            .changed
            .is_empty()
        {
            return Err(refusal(self, id, "cancel").await);
        }
        #[cfg(feature = "metrics")]
        count_cancelled(self, id).await;
        Ok(())
    }

    async fn delete(&self, id: JobId) -> Result<(), Error> {
        if manage_one(self, Action::Delete, id)
            .await?
            .changed
            .is_empty()
        {
            return Err(Error::NotFound(id));
        }
        Ok(())
    }

    async fn retry_all(&self, filter: &JobFilter) -> Result<u64, Error> {
        manage_matching(self, Action::Retry, filter).await
    }

    async fn cancel_all(&self, filter: &JobFilter) -> Result<u64, Error> {
        manage_matching(self, Action::Cancel, filter).await
    }

    async fn delete_all(&self, filter: &JobFilter) -> Result<u64, Error> {
        manage_matching(self, Action::Delete, filter).await
    }

    async fn purge(&self, status: JobStatus, before: Timestamp) -> Result<u64, Error> {
        if status.is_active() {
            return Err(Error::Invalid(format!(
                "only finished jobs are purged (completed, dead or cancelled), not {status} ones"
            )));
        }
        let filter = JobFilter::new().status(status).finished_before(before);
        manage_matching(self, Action::Delete, &filter).await
    }

    async fn schedules(&self) -> Result<Vec<ScheduleSummary>, Error> {
        let now = SystemClock.now();
        let stored = self.stored_schedules(SchedulesParams {}).await?;
        Ok(stored
            .into_iter()
            .map(|s| ScheduleSummary {
                next: next_ticks(&s.schedule, now),
                last_tick: s.last_tick,
                seen_at: s.seen_at,
                schedule: s.schedule,
            })
            .collect())
    }

    async fn workers(&self) -> Result<Vec<WorkerSummary>, Error> {
        let now = SystemClock.now();
        let workers = self.live_workers(WorkersParams { now }).await?;
        if workers.is_empty() {
            return Ok(Vec::new());
        }
        let running = self
            .list(ListParams {
                filter: JobFilter::new().status(JobStatus::Running),
                after: None,
                limit: MAX_RUNNING,
            })
            .await?;
        let mut by_worker: HashMap<&str, Vec<JobId>> = HashMap::new();
        for job in &running {
            if let Some(lease) = &job.lease {
                by_worker.entry(&lease.worker).or_default().push(job.id);
            }
        }
        Ok(workers
            .into_iter()
            .map(|worker| WorkerSummary {
                running: by_worker.remove(worker.id.as_str()).unwrap_or_default(),
                worker,
            })
            .collect())
    }

    async fn catalog(&self) -> Result<Vec<PublishedType>, Error> {
        self.job_types(JobTypesParams {}).await
    }

    async fn job_type(&self, name: &str) -> Result<PublishedType, Error> {
        by_name::newest(self, name).await
    }

    async fn enqueue_json(
        &self,
        name: &str,
        payload: serde_json::Value,
    ) -> Result<Enqueued, Error> {
        by_name::enqueue_json(self, name, payload).await
    }

    async fn workflow(&self, id: WorkflowId) -> Result<WorkflowStatus, Error> {
        WorkflowStatus::read(self, id)
            .await?
            .ok_or(Error::WorkflowNotFound(id))
    }

    async fn cancel_workflow(&self, id: WorkflowId) -> Result<u64, Error> {
        self.cancel_all(&JobFilter::new().tag(id.tag())).await
    }

    async fn job_events(&self, queues: &[&str]) -> Result<EventStream, Error> {
        let queues = queues.iter().map(|q| q.to_string()).collect();
        self.events(EventsParams { queues }).await
    }

    async fn stranded(&self) -> Result<Vec<Stranded>, Error> {
        let now = SystemClock.now();
        let workers = self.live_workers(WorkersParams { now }).await?;
        let mut stranded = Vec::new();
        for queue in self.queue_names(QueueNamesParams {}).await? {
            let known: Vec<&str> = workers
                .iter()
                .filter(|w| w.queues.contains(&queue))
                .flat_map(|w| w.names.iter().map(String::as_str))
                .collect();
            let pending = self
                .list(ListParams {
                    filter: JobFilter::new().queue(&queue).status(JobStatus::Pending),
                    after: None,
                    limit: STRANDED_SCAN,
                })
                .await?;
            let mut of_queue: Vec<Stranded> = Vec::new();
            for job in pending.iter().filter(|j| !known.contains(&&*j.name)) {
                match of_queue.iter_mut().find(|s| *s.name == *job.name) {
                    Some(s) => s.jobs += 1,
                    None => of_queue.push(Stranded {
                        queue: queue.clone(),
                        name: job.name.to_string(),
                        jobs: 1,
                        oldest: job.id,
                        since: job.created_at,
                    }),
                }
            }
            stranded.extend(of_queue);
        }
        Ok(stranded)
    }
}

async fn manage_one<B: Backend + ?Sized>(
    backend: &B,
    action: Action,
    id: JobId,
) -> Result<Managed, Error> {
    backend
        .manage(ManageParams {
            action,
            target: Target::Ids(vec![id]),
            limit: 1,
            now: SystemClock.now(),
        })
        .await
}

/// Applies `action` to every job matching `filter`, a batch per call, following the cursor.
async fn manage_matching<B: Backend + ?Sized>(
    backend: &B,
    action: Action,
    filter: &JobFilter,
) -> Result<u64, Error> {
    let mut total = 0;
    let mut after = None;
    loop {
        let managed = backend
            .manage(ManageParams {
                action,
                target: Target::Matching {
                    filter: filter.clone(),
                    after,
                },
                limit: BULK_BATCH,
                now: SystemClock.now(),
            })
            .await?;
        total += managed.changed.len() as u64;
        #[cfg(feature = "metrics")]
        if matches!(action, Action::Cancel) {
            let queue = filter.queue.as_deref().unwrap_or_default();
            let n = managed.changed.len() as u64;
            crate::metrics::count_by_queue(crate::metrics::CANCELLED, queue, n);
        }
        match managed.last {
            Some(last) => after = Some(last),
            None => return Ok(total),
        }
    }
}

/// Counts a job just cancelled, under the queue its record names (`""` if gone meanwhile).
#[cfg(feature = "metrics")]
async fn count_cancelled<B: Backend + ?Sized>(backend: &B, id: JobId) {
    let queue = match backend.read(ReadParams { id }).await {
        Ok(Some(job)) => job.queue.to_string(),
        _ => String::new(),
    };
    crate::metrics::count_by_queue(crate::metrics::CANCELLED, &queue, 1);
}

/// Why an operation on one job changed nothing: it is gone, or in the wrong status.
async fn refusal<B: Backend + ?Sized>(backend: &B, id: JobId, action: &'static str) -> Error {
    match backend.read(ReadParams { id }).await {
        Ok(Some(job)) => Error::WrongStatus {
            id,
            status: job.status,
            action,
        },
        Ok(None) => Error::NotFound(id),
        Err(e) => e,
    }
}

/// The next ticks of a recorded schedule (none if it no longer parses).
fn next_ticks(schedule: &ScheduleInfo, now: Timestamp) -> Vec<Timestamp> {
    let Ok(parsed) = Schedule::parse(&schedule.expression, Some(&schedule.timezone)) else {
        return Vec::new();
    };
    let mut ticks = Vec::with_capacity(NEXT_TICKS);
    let mut after = now;
    while ticks.len() < NEXT_TICKS {
        match parsed.next_after(after) {
            Some(tick) => {
                ticks.push(tick);
                after = tick;
            }
            None => break,
        }
    }
    ticks
}
