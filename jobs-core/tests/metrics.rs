//! What the worker, enqueueing and the operations record through the `metrics` facade, on the
//! memory backend, read back from a `DebuggingRecorder` (feature `metrics`).
//!
//! One test installs the recorder for this binary and runs the scenarios one after another,
//! each in its own queue so their series never mix.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use jobs_core::metrics::*;
use jobs_core::{
    Backend as _, Backoff, Clock as _, FetchParams, Job, JobContext, JobError, JobExt, JobFilter,
    JobOptions, JobStatus, MemoryBackend, Operations as _, StateMap, SystemClock, Worker,
};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use serde::{Deserialize, Serialize};

/// Succeeds.
#[derive(Serialize, Deserialize)]
struct Work {
    key: Option<String>,
}

impl Job for Work {
    const NAME: &'static str = "metrics.work";
    type Output = ();
    fn unique_key(&self) -> Option<String> {
        self.key.clone()
    }
    async fn run(self, _: JobContext, _: StateMap) -> Result<(), JobError> {
        Ok(())
    }
}

/// Always fails, retryably, with no delay between its two attempts.
#[derive(Serialize, Deserialize)]
struct Broken;

impl Job for Broken {
    const NAME: &'static str = "metrics.broken";
    type Output = ();
    fn options() -> JobOptions {
        JobOptions {
            max_attempts: 2,
            backoff: Backoff::fixed(Duration::from_millis(1)),
            ..Default::default()
        }
    }
    async fn run(self, _: JobContext, _: StateMap) -> Result<(), JobError> {
        Err(JobError::retryable("broken"))
    }
}

/// Registered with no worker: waits pending for ever.
#[derive(Serialize, Deserialize)]
struct Orphan;

impl Job for Orphan {
    const NAME: &'static str = "metrics.orphan";
    type Output = ();
    async fn run(self, _: JobContext, _: StateMap) -> Result<(), JobError> {
        Ok(())
    }
}

/// A metric's name and labels, sorted.
type Series = (String, Vec<(String, String)>);

/// What the recorder saw so far. A snapshot resets what it reads (counters and gauges to 0,
/// histograms emptied), so counters add up here, histogram samples are kept, and each gauge
/// keeps the highest value seen (the scenarios' depths only grow).
struct Seen {
    snapshotter: Snapshotter,
    counters: HashMap<Series, u64>,
    gauges: HashMap<Series, f64>,
    samples: HashMap<Series, Vec<f64>>,
}

fn series(name: &str, labels: &[(&str, &str)]) -> Series {
    let mut labels: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    labels.sort();
    (name.to_string(), labels)
}

impl Seen {
    fn read(&mut self) {
        for (key, _, _, value) in self.snapshotter.snapshot().into_vec() {
            let (kind, key) = key.into_parts();
            let labels: Vec<(&str, &str)> = key.labels().map(|l| (l.key(), l.value())).collect();
            let at = series(key.name(), &labels);
            match (kind, value) {
                (MetricKind::Counter, DebugValue::Counter(n)) => {
                    *self.counters.entry(at).or_default() += n;
                }
                (MetricKind::Gauge, DebugValue::Gauge(v)) => {
                    let highest = self.gauges.entry(at).or_insert(f64::MIN);
                    *highest = highest.max(v.into_inner());
                }
                (MetricKind::Histogram, DebugValue::Histogram(vs)) => self
                    .samples
                    .entry(at)
                    .or_default()
                    .extend(vs.into_iter().map(|v| v.into_inner())),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    fn counter(&mut self, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.read();
        self.counters
            .get(&series(name, labels))
            .copied()
            .unwrap_or(0)
    }

    fn gauge(&mut self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.read();
        self.gauges.get(&series(name, labels)).copied()
    }

    fn samples(&mut self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        self.read();
        self.samples
            .get(&series(name, labels))
            .cloned()
            .unwrap_or_default()
    }
}

/// Polls `check` until it holds, for at most 5 s.
async fn eventually<F: FnMut() -> Fut, Fut: Future<Output = bool>>(what: &str, mut check: F) {
    let waited = tokio::time::timeout(Duration::from_secs(5), async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    waited
        .await
        .unwrap_or_else(|_| panic!("{what}: not in 5 s"));
}

/// Runs `worker` until `done` holds, then stops it.
async fn run_until(worker: Worker, done: impl Future<Output = ()> + Send + 'static) {
    tokio::time::timeout(Duration::from_secs(10), worker.run_until(done))
        .await
        .expect("the worker stops")
        .expect("the worker runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_enqueueing_and_operations_record_their_metrics() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the only recorder of this binary");
    let mut seen = Seen {
        snapshotter,
        counters: HashMap::new(),
        gauges: HashMap::new(),
        samples: HashMap::new(),
    };

    completed_jobs(&mut seen).await;
    failing_job(&mut seen).await;
    enqueue_counts_only_new_jobs(&mut seen).await;
    rescued_job(&mut seen).await;
    cancelled_jobs(&mut seen).await;
    queue_depth(&mut seen).await;
}

/// N completed jobs: N enqueued, started and completed, and N samples of each histogram.
async fn completed_jobs(seen: &mut Seen) {
    const N: u64 = 20;
    let backend = MemoryBackend::new();
    let q = "m_done";
    for _ in 0..N {
        Work { key: None }.queue(q).enqueue(&backend).await.unwrap();
    }
    let drained = Worker::new(backend.clone())
        .queues([q])
        .concurrency(4)
        .register::<Work>()
        .drain()
        .await
        .unwrap();
    assert_eq!(drained.completed, N);

    let job = [(LABEL_QUEUE, q), (LABEL_NAME, Work::NAME)];
    assert_eq!(seen.counter(ENQUEUED, &job), N);
    assert_eq!(seen.counter(STARTED, &job), N);
    assert_eq!(seen.counter(COMPLETED, &job), N);
    assert_eq!(seen.counter(FAILED, &job), 0);
    assert_eq!(seen.counter(DEAD, &job), 0);
    for histogram in [RUN_SECONDS, PICKUP_SECONDS, ENQUEUE_TO_FINISH_SECONDS] {
        let samples = seen.samples(histogram, &job);
        assert_eq!(samples.len() as u64, N, "{histogram}");
        assert!(
            samples.iter().all(|s| (0.0..10.0).contains(s)),
            "{histogram}: {samples:?}"
        );
    }
}

/// A job failing both of its 2 attempts: failed 2, retried 1, dead 1.
async fn failing_job(seen: &mut Seen) {
    let backend = MemoryBackend::new();
    let q = "m_fail";
    Broken.queue(q).enqueue(&backend).await.unwrap();
    let drained = Worker::new(backend.clone())
        .queues([q])
        .register::<Broken>()
        .drain()
        .await
        .unwrap();
    assert_eq!(drained.dead, 1);

    let job = [(LABEL_QUEUE, q), (LABEL_NAME, Broken::NAME)];
    assert_eq!(seen.counter(STARTED, &job), 2);
    assert_eq!(seen.counter(FAILED, &job), 2);
    assert_eq!(seen.counter(RETRIED, &job), 1);
    assert_eq!(seen.counter(DEAD, &job), 1);
    assert_eq!(seen.counter(COMPLETED, &job), 0);
    assert_eq!(seen.samples(RUN_SECONDS, &job).len(), 2);
    assert_eq!(seen.samples(PICKUP_SECONDS, &job).len(), 2);
    assert_eq!(
        seen.samples(ENQUEUE_TO_FINISH_SECONDS, &job).len(),
        1,
        "only the attempt that left it dead finished it"
    );
}

/// Enqueueing counts the jobs stored, not the duplicates of an active unique key.
async fn enqueue_counts_only_new_jobs(seen: &mut Seen) {
    let backend = MemoryBackend::new();
    let q = "m_unique";
    let keyed = |key: &str| {
        Work {
            key: Some(key.into()),
        }
        .queue(q)
    };
    for _ in 0..3 {
        keyed("a").enqueue(&backend).await.unwrap();
    }
    let many = Work::enqueue_many(&backend, [keyed("a"), keyed("b"), keyed("c"), keyed("b")])
        .await
        .unwrap();
    assert_eq!(
        many.iter().filter(|h| h.is_duplicate()).count(),
        2,
        "`a` is active already, and the batch holds `b` twice"
    );
    let job = [(LABEL_QUEUE, q), (LABEL_NAME, Work::NAME)];
    assert_eq!(seen.counter(ENQUEUED, &job), 3, "a, b and c");
}

/// A job whose lease lapsed is rescued by a running worker, then run.
async fn rescued_job(seen: &mut Seen) {
    let backend = MemoryBackend::new();
    let q = "m_rescue";
    let handle = Work { key: None }.queue(q).enqueue(&backend).await.unwrap();
    let leased = backend
        .fetch(FetchParams {
            ended: Vec::new(),
            known: None,
            queues: vec![q.into()],
            limit: 1,
            worker: "vanished".into(),
            lease_for: Duration::from_millis(1),
            now: SystemClock.now(),
            flow: Vec::new(),
            reserve: 0,
            deliver: 0,
        })
        .await
        .unwrap();
    assert_eq!(leased.len(), 1);
    tokio::time::sleep(Duration::from_millis(5)).await;

    let watched = backend.clone();
    let done = async move {
        eventually("the rescued job completes", || async {
            handle.status(&watched).await.unwrap() == JobStatus::Completed
        })
        .await
    };
    let worker = Worker::new(backend.clone())
        .queues([q])
        .register::<Work>()
        .rescue_interval(Duration::from_millis(20));
    run_until(worker, done).await;

    assert_eq!(seen.counter(RESCUED, &[(LABEL_QUEUE, q)]), 1);
    let job = [(LABEL_QUEUE, q), (LABEL_NAME, Work::NAME)];
    assert_eq!(seen.counter(COMPLETED, &job), 1);
}

/// `cancel` counts under the job's queue, `cancel_all` under its filter's.
async fn cancelled_jobs(seen: &mut Seen) {
    let backend = MemoryBackend::new();
    let later = Duration::from_secs(3600);
    let one = Work { key: None }
        .queue("m_cancel")
        .delay(later)
        .enqueue(&backend)
        .await
        .unwrap();
    backend.cancel(one.id()).await.unwrap();
    assert!(backend.cancel(one.id()).await.is_err(), "cancelled already");
    for _ in 0..3 {
        Work { key: None }
            .queue("m_cancel_all")
            .delay(later)
            .enqueue(&backend)
            .await
            .unwrap();
    }
    let filter = JobFilter::new().queue("m_cancel_all");
    assert_eq!(backend.cancel_all(&filter).await.unwrap(), 3);

    assert_eq!(seen.counter(CANCELLED, &[(LABEL_QUEUE, "m_cancel")]), 1);
    assert_eq!(seen.counter(CANCELLED, &[(LABEL_QUEUE, "m_cancel_all")]), 3);
}

/// A running worker sets the depth gauges of its queues from the store's counts.
async fn queue_depth(seen: &mut Seen) {
    let backend = MemoryBackend::new();
    let q = "m_depth";
    for _ in 0..4 {
        Orphan.queue(q).enqueue(&backend).await.unwrap();
    }
    Orphan
        .queue(q)
        .delay(Duration::from_secs(3600))
        .enqueue(&backend)
        .await
        .unwrap();
    let depth = |status: &'static str| [(LABEL_QUEUE, q), (LABEL_STATUS, status)];
    let worker = Worker::new(backend.clone()).queues([q]).register::<Work>();
    let watched = Mutex::new(&mut *seen);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(worker.run_until(async {
        let _ = stopped.await;
    }));
    eventually("the depth gauges are set", || async {
        let mut seen = watched.lock().unwrap();
        seen.gauge(QUEUE_DEPTH, &depth("pending")) == Some(4.0)
            && seen.gauge(QUEUE_DEPTH, &depth("scheduled")) == Some(1.0)
    })
    .await;
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();

    assert_eq!(seen.gauge(QUEUE_DEPTH, &depth("running")), Some(0.0));
    assert_eq!(seen.gauge(QUEUE_DEPTH, &depth("dead")), Some(0.0));
}
