//! Checks of the worker on top of the backend: retries, panics, timeouts, leases, shutdown, cron.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::testing::jobs::*;
use crate::testing::support::*;
use crate::*;

fn counter() -> (Arc<AtomicU32>, impl Fn(&JobEvent) + Send + Sync + 'static) {
    let count = Arc::new(AtomicU32::new(0));
    let seen = count.clone();
    (count, move |_: &JobEvent| {
        seen.fetch_add(1, Ordering::SeqCst);
    })
}

/// A worker runs jobs; the typed result and the progress are readable by id.
pub async fn worker_runs_jobs_and_returns_typed_results(b: AnyBackend) {
    let (completed, hook) = counter();
    let running = Running::start(worker(&b).register::<Echo>().on_completed(hook));
    let handles = Echo::enqueue_many(&b, (1..=20).map(|n| Echo { n }))
        .await
        .unwrap();
    for (n, handle) in (1..=20).zip(&handles) {
        assert_eq!(handle.wait(&b).await.unwrap(), n * 2);
    }
    let r = handles[0].record(&b).await.unwrap();
    assert_eq!(
        (r.status, r.progress, r.attempt),
        (JobStatus::Completed, 50, 1)
    );
    assert!(r.started_at.is_some() && r.finished_at >= r.started_at);
    running.stop().await.unwrap();
    assert_eq!(completed.load(Ordering::SeqCst), 20);
}

/// Retries wait for exactly the backoff (exponential from 1 s: 1 s, then 2 s), on a manual clock.
pub async fn worker_retries_follow_backoff(b: AnyBackend) {
    let clock = Arc::new(ManualClock::new(t0()));
    let running = Running::start(worker(&b).register::<Flaky>().clock(clock.clone()));
    let job = Enqueue::from(Flaky { failures: 2 }).run_at(t0());
    let id = job.enqueue(&b).await.unwrap().id();

    let first = wait_for(&b, id, "the first attempt failed", |r| {
        r.attempt == 1 && r.status == JobStatus::Pending
    })
    .await;
    assert_eq!(first.run_at, at(1_000));
    assert_eq!(first.errors[0].message, "flaky failure 1");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        record(&b, id).await.attempt,
        1,
        "no retry before the backoff elapsed"
    );

    clock.advance(Duration::from_secs(1));
    let second = wait_for(&b, id, "the second attempt failed", |r| {
        r.attempt == 2 && r.status == JobStatus::Pending
    })
    .await;
    assert_eq!(second.run_at, at(3_000));
    clock.advance(Duration::from_millis(1_999));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(record(&b, id).await.attempt, 2);
    clock.advance(Duration::from_millis(1));
    let done = wait_for(&b, id, "the job completed", |r| {
        r.status == JobStatus::Completed
    })
    .await;
    assert_eq!(done.attempt, 3);
    assert_eq!(
        serde_json::from_str::<u32>(done.result.unwrap().get()).unwrap(),
        3
    );
    running.stop().await.unwrap();
}

/// After its last attempt a failing job is dead, with each attempt's error; hooks see it all.
pub async fn worker_dead_after_max_attempts(b: AnyBackend) {
    let (failed, on_failed) = counter();
    let (dead, on_dead) = counter();
    let running = Running::start(
        worker(&b)
            .register::<Fails>()
            .on_failed(on_failed)
            .on_dead(on_dead),
    );
    let handle = Fails { fatal: false }.enqueue(&b).await.unwrap();
    let r = wait_for(&b, handle.id(), "the job is dead", |r| {
        r.status == JobStatus::Dead
    })
    .await;
    let messages: Vec<&str> = r.errors.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "failure in attempt 1",
            "failure in attempt 2",
            "failure in attempt 3"
        ]
    );
    let err = handle.result(&b).await.unwrap_err().to_string();
    assert!(
        err.contains("dead") && err.contains("failure in attempt 3"),
        "{err}"
    );
    running.stop().await.unwrap();
    assert_eq!(
        (failed.load(Ordering::SeqCst), dead.load(Ordering::SeqCst)),
        (3, 1)
    );
}

/// A fatal error goes straight to dead, whatever attempts remain.
pub async fn worker_fatal_error_goes_dead_at_once(b: AnyBackend) {
    let running = Running::start(worker(&b).register::<Fails>());
    let id = Fails { fatal: true }.enqueue(&b).await.unwrap().id();
    let r = wait_for(&b, id, "the job is dead", |r| r.status == JobStatus::Dead).await;
    assert_eq!((r.attempt, r.max_attempts, r.errors.len()), (1, 3, 1));
    running.stop().await.unwrap();
}

/// A panic is a failed attempt with the panic's message; the worker goes on running jobs.
pub async fn worker_survives_a_panicking_handler(b: AnyBackend) {
    let running = Running::start(worker(&b).register::<Panics>().register::<Echo>());
    let id = Panics {}.enqueue(&b).await.unwrap().id();
    let r = wait_for(&b, id, "the panicking job is dead", |r| {
        r.status == JobStatus::Dead
    })
    .await;
    assert_eq!(r.errors[0].message, "handler panicked: boom");
    let after = Echo { n: 4 }.enqueue(&b).await.unwrap();
    assert_eq!(after.wait(&b).await.unwrap(), 8);
    running.stop().await.unwrap();
}

/// A payload that no longer deserializes is a failed attempt with a clear error, as is a job no
/// handler is registered for.
pub async fn worker_fails_undeserializable_payload(b: AnyBackend) {
    let running = Running::start(worker(&b).register::<Echo>());
    let mut stale = new_job(Echo::NAME);
    stale.payload = json(r#"{"count":"seven"}"#);
    stale.max_attempts = 1;
    stale.run_at = SystemClock.now();
    let mut unknown = new_job("conformance.nobody");
    unknown.max_attempts = 1;
    unknown.run_at = SystemClock.now();
    let stale_id = put_at(&b, stale, SystemClock.now()).await;
    let unknown_id = put_at(&b, unknown, SystemClock.now()).await;
    let r = wait_for(&b, stale_id, "the stale job is dead", |r| {
        r.status == JobStatus::Dead
    })
    .await;
    let message = &r.errors[0].message;
    assert!(
        message.contains("payload does not deserialize") && message.contains("missing field `n`"),
        "{message}"
    );
    let r = wait_for(&b, unknown_id, "the unknown job is dead", |r| {
        r.status == JobStatus::Dead
    })
    .await;
    assert!(
        r.errors[0]
            .message
            .contains("no handler for job `conformance.nobody`"),
        "{:?}",
        r.errors
    );
    running.stop().await.unwrap();
}

/// An attempt running past its timeout is failed with a timeout error.
pub async fn worker_times_out_slow_attempts(b: AnyBackend) {
    let running = Running::start(worker(&b).register::<Sleeps>());
    let id = Sleeps { ms: 30_000 }
        .timeout(Duration::from_millis(50))
        .enqueue(&b)
        .await
        .unwrap()
        .id();
    let r = wait_for(&b, id, "the slow job is dead", |r| {
        r.status == JobStatus::Dead
    })
    .await;
    assert_eq!(r.errors[0].message, "timed out after 50ms");
    running.stop().await.unwrap();
}

/// Jobs leased by a worker that died (it never renews) run again once the lease lapses.
pub async fn worker_reruns_jobs_of_a_dead_worker(b: AnyBackend) {
    let handles = Echo::enqueue_many(&b, (0..3).map(|n| Echo { n }))
        .await
        .unwrap();
    let params = FetchParams {
        queues: vec![QUEUE.into()],
        limit: 3,
        worker: "crashed".into(),
        lease_for: Duration::from_millis(300),
        now: SystemClock.now(),
    };
    assert_eq!(
        b.fetch(params).await.unwrap().len(),
        3,
        "the doomed worker took every job"
    );
    let running = Running::start(worker(&b).register::<Echo>());
    for (n, handle) in (0..3).zip(&handles) {
        assert_eq!(handle.wait(&b).await.unwrap(), n * 2);
        let r = handle.record(&b).await.unwrap();
        assert_eq!(r.attempt, 2, "the lost attempt counts");
        assert!(
            r.errors[0].message.contains("lease expired"),
            "{:?}",
            r.errors
        );
    }
    running.stop().await.unwrap();
}

/// Two workers on one queue never run the same job twice.
pub async fn workers_never_run_a_job_twice(b: AnyBackend) {
    let counter = Counter::default();
    let start = |id: &str| {
        let w = worker(&b).id(id).concurrency(8).register::<Counted>();
        Running::start(w.state(counter.clone()))
    };
    let (one, two) = (start("one"), start("two"));
    let handles = Counted::enqueue_many(&b, (0..120).map(|_| Counted {}))
        .await
        .unwrap();
    for handle in &handles {
        handle.wait(&b).await.unwrap();
    }
    one.stop().await.unwrap();
    two.stop().await.unwrap();
    let runs = counter.runs();
    assert_eq!(runs.len(), 120);
    assert!(runs.values().all(|&n| n == 1), "a job ran twice: {runs:?}");
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

/// Cancelling a running job revokes its lease: the worker stops it and records nothing over it.
pub async fn worker_stops_a_cancelled_job(b: AnyBackend) {
    let w = worker(&b)
        .register::<Sleeps>()
        .register::<Echo>()
        .lease(Duration::from_millis(150));
    let running = Running::start(w);
    let id = Sleeps { ms: 30_000 }.enqueue(&b).await.unwrap().id();
    wait_for(&b, id, "the job is running", |r| {
        r.status == JobStatus::Running
    })
    .await;
    assert!(b
        .cancel(CancelParams {
            id,
            now: SystemClock.now()
        })
        .await
        .unwrap());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(record(&b, id).await.status, JobStatus::Cancelled);
    assert_eq!(
        Echo { n: 1 }
            .enqueue(&b)
            .await
            .unwrap()
            .wait(&b)
            .await
            .unwrap(),
        2,
        "the slot was freed"
    );
    running.stop().await.unwrap();
    assert_eq!(record(&b, id).await.status, JobStatus::Cancelled);
}

/// The worker prunes completed jobs beyond its queue's retention.
pub async fn worker_prunes_by_retention(b: AnyBackend) {
    let w = worker(&b)
        .register::<Echo>()
        .retention(QUEUE, Retention::count(2))
        .prune_interval(Duration::from_millis(20))
        .concurrency(1)
        .prefetch(0);
    let running = Running::start(w);
    let handles = Echo::enqueue_many(&b, (0..6).map(|n| Echo { n }))
        .await
        .unwrap();
    let counts = || {
        let b = b.clone();
        async move {
            b.counts(CountsParams {
                queue: QUEUE.into(),
            })
            .await
            .unwrap()
        }
    };
    eventually("all ran and only two are kept", || async {
        let c = counts().await;
        c.completed == 2 && c.pending == 0 && c.running == 0
    })
    .await;
    // One at a time, so the last two enqueued finished last.
    for newest in &handles[4..] {
        assert!(newest.record(&b).await.is_ok(), "the newest are kept");
    }
    running.stop().await.unwrap();
}

/// Two workers schedule the same cron job; each tick is enqueued once.
pub async fn cron_enqueued_once_per_tick_across_workers(b: AnyBackend) {
    let cron_worker = |id: &str| worker(&b).id(id).register::<Ticker>().cron(true);
    let one = Running::start(cron_worker("one"));
    let two = Running::start(cron_worker("two"));
    eventually("two ticks ran", || async {
        let params = ListParams {
            queue: Some(QUEUE.into()),
            status: Some(JobStatus::Completed),
            after: None,
            limit: 100,
        };
        b.list(params).await.unwrap().len() >= 2
    })
    .await;
    one.stop().await.unwrap();
    two.stop().await.unwrap();
    let params = ListParams {
        queue: Some(QUEUE.into()),
        status: None,
        after: None,
        limit: 100,
    };
    let jobs = b.list(params).await.unwrap();
    let mut ticks: Vec<Timestamp> = jobs.iter().map(|r| r.run_at).collect();
    ticks.sort();
    let count = ticks.len();
    ticks.dedup();
    assert_eq!(ticks.len(), count, "a tick was enqueued twice: {ticks:?}");
    assert!(
        ticks.iter().all(|t| t.timestamp_subsec_millis() == 0),
        "ticks fall on whole seconds"
    );
    assert!(jobs.iter().all(|r| r.name == Ticker::NAME));
}

/// A worker whose handlers need a `State<T>` it lacks, or with two job types under one name,
/// refuses to start and says why.
pub async fn worker_refuses_to_start_without_state(b: AnyBackend) {
    let err = worker(&b)
        .register::<Counted>()
        .run_until(async {})
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("job `conformance.counted` takes `State<") && err.contains("Counter"),
        "{err}"
    );
    let err = worker(&b)
        .register::<Echo>()
        .register::<Impostor>()
        .run_until(async {})
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("two jobs are stored under the name `conformance.echo`")
            && err.contains("Impostor"),
        "{err}"
    );
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
