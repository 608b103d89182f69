//! A worker's life: the checks that keep it from starting, graceful shutdown, and what it
//! records in the store about itself while it runs (its heartbeat and its cron schedules).

use std::time::Duration;

use crate::testing::jobs::*;
use crate::testing::support::*;
use crate::*;

/// A worker whose handlers need a `State<T>` it lacks, with two job types under one name, or
/// with a schedule that does not parse refuses to start, listing every problem.
pub async fn worker_refuses_to_start_listing_every_problem(b: AnyBackend) {
    let refused = worker(&b)
        .register::<Counted>()
        .register::<Echo>()
        .register::<Impostor>()
        .register::<BadCron>()
        .run_until(async {})
        .await;
    let Err(Error::Start(problems)) = refused else {
        panic!("the worker started: {refused:?}");
    };
    let mut found: Vec<&str> = problems
        .iter()
        .map(|problem| match problem {
            StartProblem::MissingState { job, type_name } => {
                assert_eq!(job, Counted::NAME);
                assert!(type_name.ends_with("Counter"), "{type_name}");
                "missing state"
            }
            StartProblem::DuplicateName {
                name,
                first,
                second,
            } => {
                assert_eq!(name, Echo::NAME);
                let types = [first, second];
                assert!(types.iter().any(|t| t.ends_with("Impostor")), "{types:?}");
                assert!(types.iter().any(|t| t.ends_with("Echo")), "{types:?}");
                "duplicate name"
            }
            StartProblem::BadSchedule { job, .. } => {
                assert_eq!(job, BadCron::NAME);
                "bad schedule"
            }
            other => panic!("unexpected problem: {other}"),
        })
        .collect();
    found.sort_unstable();
    assert_eq!(found, ["bad schedule", "duplicate name", "missing state"]);
    let text = Error::Start(problems).to_string();
    assert!(
        text.contains("job `conformance.counted` takes `State<") && text.contains("Counter"),
        "{text}"
    );
}

/// On shutdown, a running job that finishes within the grace period completes.
pub async fn worker_shutdown_finishes_within_grace(b: AnyBackend) {
    let running = Running::start(
        worker(&b)
            .register::<Sleeps>()
            .grace_period(Duration::from_secs(10)),
    );
    let id = Sleeps { ms: 300 }.enqueue(&b).await.unwrap().id();
    // Leased is not enough: a leased job that has not started yet is handed back.
    wait_for(&b, id, "the handler started", |r| r.progress == 1).await;
    running.stop().await.unwrap();
    let r = record(&b, id).await;
    assert_eq!((r.status, r.attempt), (JobStatus::Completed, 1));
}

/// On shutdown, running jobs past the grace period and prefetched jobs are handed back
/// without spending an attempt.
pub async fn worker_shutdown_hands_back_unfinished_jobs(b: AnyBackend) {
    let w = worker(&b)
        .register::<Sleeps>()
        .concurrency(1)
        .prefetch(1)
        .grace_period(Duration::from_millis(100));
    let handles = Sleeps::enqueue_many(&b, [Sleeps { ms: 30_000 }, Sleeps { ms: 30_000 }])
        .await
        .unwrap();
    let running = Running::start(w);
    for handle in &handles {
        wait_for(&b, handle.id(), "both jobs are leased", |r| {
            r.status == JobStatus::Running
        })
        .await;
    }
    running.stop().await.unwrap();
    for handle in &handles {
        let r = handle.record(&b).await.unwrap();
        assert_eq!(
            (r.status, r.attempt, r.lease.is_none()),
            (JobStatus::Pending, 0, true)
        );
        assert!(r.errors.is_empty());
    }
}

/// The worker's entry in `Operations::workers`, if it is listed.
async fn listed(b: &AnyBackend, id: &str) -> Option<WorkerSummary> {
    let workers = b.workers().await.expect("workers");
    workers.into_iter().find(|w| w.worker.id == id)
}

/// A running worker is listed by `Operations::workers` as it is (queues, concurrency, the
/// names it runs, host and pid) with the job it runs, from its first heartbeat and with each
/// later one; after a graceful shutdown it is not.
pub async fn worker_records_its_heartbeat(b: AnyBackend) {
    const ID: &str = "conformance-heartbeat";
    let w = worker(&b)
        .id(ID)
        .concurrency(3)
        .register::<Echo>()
        .register::<Sleeps>()
        .heartbeat_interval(Duration::from_millis(50))
        .grace_period(Duration::from_millis(50));
    let started = real_now();
    let running = Running::start(w);
    let job = Sleeps { ms: 30_000 }.enqueue(&b).await.unwrap().id();
    wait_for(&b, job, "the job runs", |r| r.progress == 1).await;
    eventually("the worker lists itself", || async {
        listed(&b, ID).await.is_some()
    })
    .await;

    let summary = listed(&b, ID).await.expect("listed");
    let me = &summary.worker;
    assert_eq!(summary.running, vec![job], "the job it runs");
    assert_eq!(
        (me.queues.as_slice(), me.concurrency),
        (&[QUEUE.to_string()][..], 3)
    );
    for name in [Echo::NAME, Sleeps::NAME] {
        assert!(
            me.names.iter().any(|n| n == name),
            "{name} in {:?}",
            me.names
        );
    }
    assert!(!me.host.is_empty(), "a host name");
    assert_eq!(me.pid, std::process::id());
    let second = chrono::Duration::seconds(1);
    assert!(me.started_at >= started - second && me.started_at <= me.last_seen);
    assert!(me.last_seen <= real_now() + second);
    eventually("a later heartbeat is recorded", || async {
        listed(&b, ID)
            .await
            .is_some_and(|later| later.worker.last_seen > me.last_seen)
    })
    .await;

    running.stop().await.unwrap();
    assert!(
        listed(&b, ID).await.is_none(),
        "a stopped worker is forgotten"
    );
}

/// A worker that dies without shutting down (its task is dropped) stops beating, and drops off
/// `Operations::workers` once its last heartbeat expires.
pub async fn worker_listing_lapses_when_the_worker_dies(b: AnyBackend) {
    const ID: &str = "conformance-doomed";
    let w = worker(&b)
        .id(ID)
        .register::<Echo>()
        .heartbeat_interval(Duration::from_millis(50));
    let running = Running::start(w);
    eventually("the worker lists itself", || async {
        listed(&b, ID).await.is_some()
    })
    .await;
    running.kill().await;
    eventually("the dead worker is no longer listed", || async {
        listed(&b, ID).await.is_none()
    })
    .await;
}

/// A worker running cron jobs records their schedules, so `Operations::schedules` shows them
/// (with next ticks, and the last tick once one is stored) to programs without the job types.
pub async fn worker_records_its_cron_schedules(b: AnyBackend) {
    let started = real_now();
    let running = Running::start(worker(&b).register::<Ticker>().cron(true));
    let recorded = || async {
        let schedules = b.schedules().await.expect("schedules");
        schedules
            .into_iter()
            .find(|s| s.schedule.name == Ticker::NAME)
    };
    eventually("the schedule is recorded", || async {
        recorded().await.is_some()
    })
    .await;
    let shown = recorded().await.expect("recorded");
    assert_eq!(
        shown.schedule,
        ScheduleInfo {
            name: Ticker::NAME.into(),
            queue: QUEUE.into(),
            expression: "* * * * * *".into(),
            timezone: "Europe/Paris".into(),
        }
    );
    assert_eq!(shown.next.len(), 3);
    assert!(shown.seen_at >= started - chrono::Duration::seconds(1));

    let ticks = JobFilter::new().name(Ticker::NAME);
    eventually("a tick is stored", || async {
        !b.jobs(&ticks, PageRequest::default())
            .await
            .unwrap()
            .jobs
            .is_empty()
    })
    .await;
    let last = recorded().await.expect("recorded").last_tick;
    let first_tick = b.jobs(&ticks, PageRequest::default()).await.unwrap().jobs[0].run_at;
    assert!(last >= Some(first_tick), "{last:?} after {first_tick}");
    running.stop().await.unwrap();
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Impostor {}

impl Job for Impostor {
    const NAME: &'static str = Echo::NAME;
    type Output = ();
    async fn run(self, _ctx: JobContext, _state: StateMap) -> Result<(), JobError> {
        Ok(())
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct BadCron {}

impl Job for BadCron {
    const NAME: &'static str = "conformance.bad_cron";
    type Output = ();
    fn options() -> JobOptions {
        JobOptions {
            queue: QUEUE.into(),
            ..JobOptions::default()
        }
    }
    fn cron() -> Option<CronSpec> {
        Some(CronSpec {
            expression: "every full moon",
            timezone: None,
        })
    }
    async fn run(self, _ctx: JobContext, _state: StateMap) -> Result<(), JobError> {
        Ok(())
    }
}

/// A paused queue: a worker takes none of its jobs (one started while it was paused, and one
/// that was running when it was paused within a second) until it is resumed, then runs them.
pub async fn worker_takes_nothing_from_a_paused_queue(b: AnyBackend) {
    b.pause_queue(QUEUE).await.unwrap();
    let running = Running::start(worker(&b).register::<Echo>());
    let waiting = Echo { n: 1 }.enqueue(&b).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let r = waiting.record(&b).await.unwrap();
    assert_eq!(
        (r.status, r.attempt),
        (JobStatus::Pending, 0),
        "started while paused"
    );

    b.resume_queue(QUEUE).await.unwrap();
    assert_eq!(waiting.wait(&b).await.unwrap(), 2, "run once resumed");

    b.pause_queue(QUEUE).await.unwrap();
    // A worker sees the pause within a second.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let later = Echo { n: 3 }.enqueue(&b).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let r = later.record(&b).await.unwrap();
    assert_eq!(
        (r.status, r.attempt),
        (JobStatus::Pending, 0),
        "paused while running"
    );
    b.resume_queue(QUEUE).await.unwrap();
    assert_eq!(later.wait(&b).await.unwrap(), 6);
    running.stop().await.unwrap();
}

/// An idle worker starts each job enqueued while it waits, once (a backend may lease such a job
/// to it straight away, see `FetchParams::deliver`). Once it is stopping, it takes none: a job
/// enqueued while its last job finishes within the grace period waits, unattempted, for the
/// next worker.
pub async fn worker_takes_jobs_enqueued_while_idle_until_it_stops(b: AnyBackend) {
    let running = Running::start(
        worker(&b)
            .register::<Echo>()
            .register::<Sleeps>()
            .concurrency(2)
            .grace_period(Duration::from_secs(10)),
    );
    let mut echoes = Vec::new();
    for n in 0..5 {
        // Idle again by the next one.
        tokio::time::sleep(Duration::from_millis(50)).await;
        echoes.push((n, Echo { n }.enqueue(&b).await.unwrap()));
    }
    for (n, handle) in echoes {
        assert_eq!(handle.wait(&b).await.unwrap(), n * 2);
        let r = handle.record(&b).await.unwrap();
        assert_eq!((r.status, r.attempt), (JobStatus::Completed, 1));
    }

    let sleeps = Sleeps { ms: 1_500 }.enqueue(&b).await.unwrap();
    wait_for(&b, sleeps.id(), "the handler started", |r| r.progress == 1).await;
    // One place idle, and offered while the worker waits.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stopping = tokio::spawn(running.stop());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let late = Echo { n: 9 }.enqueue(&b).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = late.record(&b).await.unwrap();
    assert_eq!(
        (r.status, r.attempt, r.lease.is_none()),
        (JobStatus::Pending, 0, true),
        "a stopping worker took a job"
    );
    stopping.await.expect("the worker's task").unwrap();
    assert_eq!(
        sleeps.wait(&b).await.unwrap(),
        1_500,
        "finished within grace"
    );
    let r = late.record(&b).await.unwrap();
    assert_eq!((r.status, r.attempt), (JobStatus::Pending, 0));
}
