//! The worker and leases: a dead worker's jobs run again, a dropped worker runs nothing more,
//! no job runs twice, a cancelled job is stopped.

use std::time::Duration;

use crate::testing::jobs::*;
use crate::testing::support::*;
use crate::*;

/// Jobs leased by a worker that died (it never renews) run again once the lease lapses, the
/// lost attempt recorded as `lease_lost`.
pub async fn worker_reruns_jobs_of_a_dead_worker(b: AnyBackend) {
    let handles = Echo::enqueue_many(&b, (0..3).map(|n| Echo { n }))
        .await
        .unwrap();
    let params = FetchParams {
        ended: Vec::new(),
        known: None,
        queues: vec![QUEUE.into()],
        limit: 3,
        worker: "crashed".into(),
        lease_for: Duration::from_millis(300),
        now: SystemClock.now(),
        flow: Vec::new(),
        reserve: 0,
        deliver: 0,
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
        assert_eq!(r.errors.len(), 1);
        let lost = &r.errors[0];
        assert_eq!((lost.attempt, lost.kind), (1, ErrorKind::LeaseLost));
        assert_eq!(lost.message, ErrorReport::lease_expired().message);
    }
    running.stop().await.unwrap();
}

/// A worker that dies mid-job (its task dropped, as its process would be: its liveness hold
/// ends) has its job rescued by another worker at once, long before the lease would lapse,
/// recording that the worker is gone.
pub async fn worker_reruns_jobs_of_a_gone_worker_at_once(b: AnyBackend) {
    let lease = Duration::from_secs(60);
    let start = |id: &str| Running::start(worker(&b).id(id).lease(lease).register::<StallsOnce>());
    let doomed = start("doomed");
    let handle = StallsOnce {}.enqueue(&b).await.unwrap();
    wait_for(&b, handle.id(), "the doomed worker runs the job", |r| {
        r.status == JobStatus::Running
    })
    .await;
    let rescuer = start("rescuer");
    let killed_at = std::time::Instant::now();
    doomed.kill().await;
    // The rescuer's own hold settles first (2 s), then it sees the dead worker within a second.
    let rerun = tokio::time::timeout(Duration::from_secs(10), handle.wait(&b)).await;
    let waited = killed_at.elapsed();
    let result =
        rerun.unwrap_or_else(|_| panic!("not rerun after {waited:?}: the death went unseen"));
    assert_eq!(result.unwrap(), 2, "the rescuer ran it");
    let r = handle.record(&b).await.unwrap();
    let lost = &r.errors[0];
    assert_eq!(
        (lost.attempt, lost.kind, lost.message.as_str()),
        (
            1,
            ErrorKind::LeaseLost,
            ErrorReport::worker_gone().message.as_str()
        )
    );
    rescuer.stop().await.unwrap();
}

/// A worker dropped mid-run (its task aborted, as its process would die) stops with it: the
/// jobs it ran are dropped unfinished, and the jobs it leased ahead never start; only a rescue
/// runs them again, so that no two workers ever run a job at once.
pub async fn worker_dropped_mid_run_runs_nothing_more(b: AnyBackend) {
    let gate = Gate::new();
    let handles = Gated::enqueue_many(&b, (0..12).map(|_| gate.job()))
        .await
        .unwrap();
    let started = || async {
        let mut started = 0;
        for handle in &handles {
            started += usize::from(handle.record(&b).await.unwrap().progress > 0);
        }
        started
    };
    let doomed = Running::start(worker(&b).register::<Gated>());
    eventually("as many jobs start as the concurrency", || async {
        started().await == 4
    })
    .await;
    assert!(
        counts(&b).await.running > 4,
        "more were leased ahead, waiting for their turn"
    );
    doomed.kill().await;
    // A worker that outlived its task would now finish the jobs it ran, and start those it
    // leased ahead.
    gate.open();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(started().await, 4, "no job leased ahead started");
    assert_eq!(
        counts(&b).await.completed,
        0,
        "the jobs that ran never finished"
    );
}

/// Two workers on one queue never run the same job twice.
pub async fn worker_never_runs_a_job_twice_across_two_workers(b: AnyBackend) {
    let counter = Counter::default();
    let start = |id: &str| {
        let w = worker(&b).id(id).concurrency(8).register::<Counted>();
        Running::start(w.state(counter.clone()))
    };
    let (one, two) = (start("one"), start("two"));
    let handles = Counted::enqueue_many(&b, (0..120).map(|_| Counted { ms: 2 }))
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
    b.cancel(id).await.expect("cancel the running job");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = record(&b, id).await;
    assert_eq!((r.status, r.errors.len()), (JobStatus::Cancelled, 0));
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
