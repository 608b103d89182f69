//! The worker's start-up and presence, on the memory backend: the problems that stop it, the
//! warning about a queue no job uses, its heartbeats and the schedules it records.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

use crate::backend::{Backend, SchedulesParams, WorkersParams};
use crate::clock::{later, Clock, ManualClock, SystemClock};
use crate::job::{CronSpec, Job, JobOptions};
use crate::memory::MemoryBackend;
use crate::model::Timestamp;
use crate::presence::{ScheduleInfo, WorkerInfo};
use crate::state::{StateKey, StateMap};
use crate::{Error, JobContext, JobError, StartProblem, Worker};

/// Declares a job type of `queue` that does nothing, with the given overrides of `Job`.
macro_rules! test_job {
    ($ty:ident, $name:literal, $queue:literal { $($items:tt)* }) => {
        #[derive(Serialize, Deserialize)]
        struct $ty;

        impl Job for $ty {
            const NAME: &'static str = $name;
            type Output = ();

            fn options() -> JobOptions {
                JobOptions {
                    queue: $queue.into(),
                    ..Default::default()
                }
            }

            $($items)*

            async fn run(self, _: JobContext, _: StateMap) -> Result<(), JobError> {
                Ok(())
            }
        }
    };
}

struct Mailer;
struct Payments;

test_job!(Noop, "worker_tests_noop", "mail" {});
test_job!(NeedsMailer, "worker_tests_needs_mailer", "needy" {
    fn required_state() -> Vec<StateKey> {
        vec![StateKey::of::<Mailer>()]
    }
});
test_job!(NeedsPayments, "worker_tests_needs_payments", "needy" {
    fn required_state() -> Vec<StateKey> {
        vec![StateKey::of::<Payments>()]
    }
});
test_job!(BadCron, "worker_tests_bad_cron", "needy" {
    fn cron() -> Option<CronSpec> {
        Some(CronSpec { expression: "every minute", timezone: None })
    }
});
test_job!(DailyReport, "worker_tests_daily_report", "reports" {
    fn cron() -> Option<CronSpec> {
        Some(CronSpec { expression: "0 9 * * *", timezone: Some("Europe/Paris") })
    }
});
test_job!(Cleanup, "worker_tests_cleanup", "reports" {
    fn cron() -> Option<CronSpec> {
        Some(CronSpec { expression: "*/5 * * * *", timezone: None })
    }
});

fn t0() -> Timestamp {
    "2026-03-01T00:00:00Z".parse().unwrap()
}

/// A running worker and the means to stop it.
struct Running {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), Error>>,
}

impl Running {
    fn start(worker: Worker) -> Self {
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(worker.run_until(async {
            let _ = stopped.await;
        }));
        Running { stop, task }
    }

    async fn stop(self) {
        self.stop.send(()).unwrap();
        self.task.await.unwrap().unwrap();
    }
}

/// Polls `read` until it gives something, for at most 5 s.
async fn eventually<T, F, Fut>(mut read: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Some(found) = read().await {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("in time")
}

async fn live_workers(backend: &MemoryBackend, now: Timestamp) -> Vec<WorkerInfo> {
    backend.live_workers(WorkersParams { now }).await.unwrap()
}

#[tokio::test]
async fn every_start_problem_is_listed_in_one_error() {
    let backend = MemoryBackend::new();
    let worker = Worker::new(backend.clone())
        .queues(["needy"])
        .register::<NeedsMailer>()
        .register::<NeedsPayments>()
        .register::<BadCron>();
    let started = tokio::time::timeout(
        Duration::from_secs(5),
        worker.run_until(std::future::pending()),
    );
    let Err(Error::Start(problems)) = started.await.expect("refused at once") else {
        panic!("the worker started");
    };
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert_eq!(
        problems[..2],
        [
            StartProblem::MissingState {
                job: "worker_tests_needs_mailer".into(),
                type_name: std::any::type_name::<Mailer>().into(),
            },
            StartProblem::MissingState {
                job: "worker_tests_needs_payments".into(),
                type_name: std::any::type_name::<Payments>().into(),
            },
        ]
    );
    assert!(
        matches!(&problems[2], StartProblem::BadSchedule { job, reason }
            if job == "worker_tests_bad_cron" && reason.contains("`every minute`")),
        "{:?}",
        problems[2]
    );
    assert!(
        live_workers(&backend, t0()).await.is_empty(),
        "a worker that did not start is not recorded"
    );
}

#[tokio::test]
async fn heartbeats_record_the_worker_until_it_stops() {
    let backend = MemoryBackend::new();
    let clock = Arc::new(ManualClock::new(t0()));
    let every = Duration::from_millis(20);
    let running = Running::start(
        Worker::new(backend.clone())
            .id("worker-a")
            .queues(["mail"])
            .concurrency(3)
            .register::<Noop>()
            .clock(clock.clone())
            .heartbeat_interval(every),
    );

    let seen = eventually(|| async { live_workers(&backend, t0()).await.pop() }).await;
    assert_eq!(
        seen,
        WorkerInfo {
            id: "worker-a".into(),
            host: seen.host.clone(),
            pid: std::process::id(),
            queues: vec!["mail".into()],
            concurrency: 3,
            names: vec!["worker_tests_noop".into()],
            started_at: t0(),
            last_seen: t0(),
        }
    );
    assert!(!seen.host.is_empty());
    let lapse = later(t0(), every * 3);
    assert_eq!(
        live_workers(&backend, lapse).await.len(),
        1,
        "listed for three intervals"
    );
    let after_lapse = later(lapse, Duration::from_millis(1));
    assert!(
        live_workers(&backend, after_lapse).await.is_empty(),
        "and no longer"
    );

    // The next beats carry the clock's time.
    clock.advance(Duration::from_secs(60));
    let now = clock.now();
    let beat = eventually(|| async {
        live_workers(&backend, now)
            .await
            .pop()
            .filter(|w| w.last_seen == now)
    })
    .await;
    assert_eq!(beat.started_at, t0(), "started_at stays");

    running.stop().await;
    assert!(
        live_workers(&backend, now).await.is_empty(),
        "a graceful stop removes the worker"
    );
}

#[tokio::test]
async fn the_schedules_it_runs_are_recorded() {
    let backend = MemoryBackend::new();
    let running = Running::start(
        Worker::new(backend.clone())
            .queues(["reports"])
            .register::<DailyReport>()
            .register::<Cleanup>()
            .register::<Noop>()
            .clock(ManualClock::new(t0())),
    );
    let stored = eventually(|| async {
        let stored = backend.stored_schedules(SchedulesParams {}).await.unwrap();
        (stored.len() == 2).then_some(stored)
    })
    .await;
    running.stop().await;

    let mut schedules: Vec<ScheduleInfo> = stored.iter().map(|s| s.schedule.clone()).collect();
    schedules.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(
        schedules,
        [
            ScheduleInfo {
                name: "worker_tests_cleanup".into(),
                queue: "reports".into(),
                expression: "*/5 * * * *".into(),
                timezone: "UTC".into(),
            },
            ScheduleInfo {
                name: "worker_tests_daily_report".into(),
                queue: "reports".into(),
                expression: "0 9 * * *".into(),
                timezone: "Europe/Paris".into(),
            },
        ]
    );
    assert!(stored.iter().all(|s| s.seen_at == t0()));
}

#[tokio::test]
async fn a_worker_that_enqueues_no_ticks_records_no_schedules() {
    let backend = MemoryBackend::new();
    let running = Running::start(
        Worker::new(backend.clone())
            .queues(["reports"])
            .register::<DailyReport>()
            .cron(false),
    );
    eventually(|| async { live_workers(&backend, SystemClock.now()).await.pop() }).await;
    running.stop().await;
    let stored = backend.stored_schedules(SchedulesParams {}).await.unwrap();
    assert!(stored.is_empty(), "{stored:?}");
}

/// The warnings emitted on this thread, as their messages.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if *event.metadata().level() != tracing::Level::WARN {
            return;
        }
        let mut message = Message::default();
        event.record(&mut message);
        self.0.lock().unwrap().push(message.0);
    }
}

#[derive(Default)]
struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

/// Starts and stops a worker on this thread, and gives the warnings it emitted.
async fn warnings_of(worker: Worker) -> Vec<String> {
    let warnings = Warnings::default();
    let subscriber = tracing_subscriber::registry().with(warnings.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    worker.run_until(async {}).await.unwrap();
    let seen = warnings.0.lock().unwrap().clone();
    seen
}

#[tokio::test]
async fn a_queue_no_registered_job_uses_is_warned_about_at_start() {
    let worker = Worker::new(MemoryBackend::new())
        .queues(["mial", "mail"])
        .register::<Noop>();
    let warnings = warnings_of(worker).await;
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = &warnings[0];
    assert!(
        warning.contains("no registered job uses queue `mial`"),
        "names the queue: {warning}"
    );
    assert!(
        warning.contains("registered jobs use `mail`"),
        "names the registered queues: {warning}"
    );
}

#[tokio::test]
async fn queues_of_registered_jobs_are_not_warned_about() {
    let named = Worker::new(MemoryBackend::new())
        .queues(["mail"])
        .register::<Noop>();
    assert_eq!(warnings_of(named).await, Vec::<String>::new());
    let chosen = Worker::new(MemoryBackend::new()).register::<Noop>();
    assert_eq!(warnings_of(chosen).await, Vec::<String>::new());
}
