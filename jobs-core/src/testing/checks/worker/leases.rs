//! The worker and leases: a dead worker's jobs run again, no job runs twice, a cancelled job
//! is stopped.

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
        names: None,
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
        assert_eq!(r.errors.len(), 1);
        let lost = &r.errors[0];
        assert_eq!((lost.attempt, lost.kind), (1, ErrorKind::LeaseLost));
        assert_eq!(lost.message, ErrorReport::lease_expired().message);
    }
    running.stop().await.unwrap();
}

/// Two workers on one queue never run the same job twice.
pub async fn worker_never_runs_a_job_twice_across_two_workers(b: AnyBackend) {
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
