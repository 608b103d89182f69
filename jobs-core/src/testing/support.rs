//! Helpers of the checks: building jobs, fixed times, waiting for a condition, running workers.

use std::future::Future;
use std::time::Duration;

use chrono::SubsecRound;
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::{
    AnyBackend, Backend, Backoff, Clock, CountsParams, EnqueueParams, Error, JobId, JobRecord,
    Json, NewJob, QueueCounts, ReadParams, SystemClock, Timestamp, Worker,
};

/// The queue every check uses.
pub const QUEUE: &str = "conformance";

/// A second queue, for checks that need jobs elsewhere.
pub(super) const OTHER_QUEUE: &str = "conformance-other";

/// A fixed instant with whole milliseconds, so every backend stores it exactly.
pub(super) fn t0() -> Timestamp {
    "2030-01-01T00:00:00Z".parse().expect("valid time")
}

/// `t0` plus `ms` milliseconds (negative for earlier).
pub(super) fn at(ms: i64) -> Timestamp {
    t0() + chrono::Duration::milliseconds(ms)
}

/// The real time in whole milliseconds, so every backend stores it exactly (for the checks of
/// operations that read the system clock themselves).
pub(super) fn real_now() -> Timestamp {
    SystemClock.now().trunc_subsecs(3)
}

/// JSON text as a payload.
pub(super) fn json(text: &str) -> Json {
    RawValue::from_string(text.to_string()).expect("valid JSON")
}

/// A job of `name` in `QUEUE`, ready at `t0`.
pub(super) fn new_job(name: &str) -> NewJob {
    NewJob {
        id: JobId::new(),
        name: name.to_string(),
        queue: QUEUE.to_string(),
        payload: json(r#"{"n":1}"#),
        version: 1,
        priority: 10,
        run_at: t0(),
        max_attempts: 3,
        backoff: Backoff::fixed(Duration::from_secs(1)),
        timeout: None,
        unique_key: None,
        trace_context: None,
        tags: Vec::new(),
        key_limits: None,
        coalesce: None,
        step: None,
    }
}

/// Enqueues one job at `t0` and returns its id.
pub async fn put(backend: &impl Backend, job: NewJob) -> JobId {
    put_at(backend, job, t0()).await
}

/// Enqueues one job at `now` and returns its id.
pub async fn put_at(backend: &impl Backend, job: NewJob, now: Timestamp) -> JobId {
    let stored = backend
        .enqueue(EnqueueParams {
            jobs: vec![job],
            now,
        })
        .await
        .expect("enqueue");
    stored[0].id
}

/// Enqueues `jobs` at `now` in one call and returns their ids, in order.
pub(super) async fn put_many(
    backend: &AnyBackend,
    jobs: impl IntoIterator<Item = NewJob>,
    now: Timestamp,
) -> Vec<JobId> {
    let jobs: Vec<NewJob> = jobs.into_iter().collect();
    let ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
    let stored = backend
        .enqueue(EnqueueParams { jobs, now })
        .await
        .expect("enqueue");
    assert_eq!(stored.iter().map(|e| e.id).collect::<Vec<_>>(), ids);
    ids
}

/// The stored record, which must exist.
pub async fn record(backend: &impl Backend, id: JobId) -> JobRecord {
    read(backend, id)
        .await
        .unwrap_or_else(|| panic!("job {id} should exist"))
}

/// The stored record, if any.
pub(super) async fn read(backend: &impl Backend, id: JobId) -> Option<JobRecord> {
    backend.read(ReadParams { id }).await.expect("read job")
}

/// The counts of `QUEUE`.
pub(super) async fn counts(b: &AnyBackend) -> QueueCounts {
    b.counts(CountsParams {
        queue: QUEUE.to_string(),
    })
    .await
    .expect("counts")
}

/// A job's JSON as a value, to compare documents rather than texts.
pub(super) fn value(json: &Json) -> serde_json::Value {
    serde_json::from_str(json.get()).expect("valid JSON")
}

/// Waits (up to 10 s, checking every 5 ms) until `condition` holds.
pub(super) async fn eventually<F, Fut>(what: &str, condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    poll_until(
        what,
        Duration::from_secs(10),
        Duration::from_millis(5),
        condition,
    )
    .await
}

/// Waits (up to `within`, checking every `every`) until `condition` holds.
pub(super) async fn poll_until<F, Fut>(
    what: &str,
    within: Duration,
    every: Duration,
    mut condition: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    while !condition().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(every).await;
    }
}

/// Waits (up to 10 s) until job `id` satisfies `condition` and returns its record.
pub async fn wait_for(
    backend: &impl Backend,
    id: JobId,
    what: &str,
    condition: impl Fn(&JobRecord) -> bool,
) -> JobRecord {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let r = record(backend, id).await;
        if condition(&r) {
            return r;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}; job is {r:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A worker running in the background until stopped.
pub(super) struct Running {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), Error>>,
}

impl Running {
    /// Starts `worker`.
    pub(super) fn start(worker: Worker) -> Self {
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(worker.run_until(async {
            let _ = stopped.await;
        }));
        Running { stop, task }
    }

    /// Signals shutdown and waits for the worker to return.
    pub(super) async fn stop(self) -> Result<(), Error> {
        let _ = self.stop.send(());
        self.task.await.expect("worker task")
    }

    /// Drops the worker mid-run, as if its process died: no shutdown, no last write for the jobs
    /// it ran or leased ahead (they wait for a rescue). Only its reserved jobs still waiting for
    /// a place are handed back, and outcomes already decided are still written.
    pub(super) async fn kill(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

/// A worker on `QUEUE` with short timers for tests.
pub(super) fn worker(backend: &AnyBackend) -> Worker {
    Worker::new(backend.clone())
        .queues([QUEUE])
        .concurrency(4)
        .poll_interval(Duration::from_millis(10))
        .rescue_interval(Duration::from_millis(20))
        .cron(false)
}
