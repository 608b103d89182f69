//! Pickup by blocked reads on the streams layout (`jobs-redis/src/streams/pickup.rs`): a worker
//! whose fetch found nothing gets the next job in the enqueue's own turn, leased to it, without
//! fetching again, and without a wake-up of the other workers; a paused queue's jobs go to no read
//! until it is resumed, nor a queue's with a concurrency or a rate; ended deliveries end the read, and so does a fetch that takes jobs; a
//! reserved lease that lapsed (its worker gone) holds no job and is dropped by the rescue; a
//! corrupt job a read takes dies alone.

use std::time::Duration;

use jobs_core::{
    Backend, EndDeliveriesParams, EnqueueParams, FetchParams, JobId, JobStatus, LeasedJob, NewJob,
    PauseParams, QueueLimits, ReadParams, RescueParams, RescueTarget, SetLimitsParams,
    SubscribeParams, Wakeup,
};
use jobs_redis::RedisBackend;

use crate::streams::{add_raw_entry, counts, ready, status, store};
use crate::support::{complete_all, fetch, keys_like, raw_connection, t0};

/// A fetch of queue `s` by worker `layout` that offers `places` idle places.
fn offering(places: usize) -> FetchParams {
    FetchParams {
        deliver: places,
        ..fetch(&["s"], 10, t0())
    }
}

/// Subscribes worker `layout` to queue `s`.
async fn subscribe(backend: &RedisBackend) -> Wakeup {
    backend
        .subscribe(SubscribeParams {
            queues: vec!["s".into()],
            worker: Some("layout".into()),
        })
        .await
        .unwrap()
}

/// Enqueues one job of queue `s`, due now; its id.
async fn enqueue_one(backend: &RedisBackend) -> JobId {
    enqueue_job(backend, ready("s")).await
}

/// Enqueues `job`; its id.
async fn enqueue_job(backend: &RedisBackend, job: NewJob) -> JobId {
    let id = job.id;
    backend
        .enqueue(EnqueueParams {
            jobs: vec![job],
            now: t0(),
        })
        .await
        .unwrap();
    id
}

/// A job of queue `s` due now, of a priority other than the default: an entry of a stream
/// that no read blocks on.
fn urgent() -> NewJob {
    let mut job = ready("s");
    job.priority = 1;
    job
}

/// The jobs delivered to `wakeup` within `within`.
async fn delivered_within(wakeup: &Wakeup, within: Duration) -> Vec<LeasedJob> {
    let deadline = tokio::time::Instant::now() + within;
    let mut got = Vec::new();
    while got.is_empty() && tokio::time::Instant::now() < deadline {
        let _ = tokio::time::timeout_at(deadline, wakeup.wait()).await;
        got = wakeup.delivered();
    }
    got
}

#[tokio::test]
async fn an_idle_worker_gets_the_next_job_leased_without_fetching_again() {
    let (prefix, backend) = store().await;
    let wakeup = subscribe(&backend).await;
    assert!(backend.fetch(offering(2)).await.unwrap().is_empty());
    let id = enqueue_one(&backend).await;
    let got = delivered_within(&wakeup, Duration::from_secs(5)).await;
    let [job] = &got[..] else {
        panic!("one job delivered: {got:?}");
    };
    assert_eq!(job.record.id, id);
    assert_eq!(job.record.attempt, 1);
    let lease = job.record.lease.as_ref().expect("leased");
    assert_eq!(&*lease.worker, "layout");
    assert_eq!(status(&backend, id).await, JobStatus::Running);
    // The read's lease is written once the job is handed over: the counts follow it.
    let mut running = 0;
    for _ in 0..50 {
        running = counts(&backend).await.running;
        if running == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!((running, counts(&backend).await.pending), (1, 0));

    complete_all(&backend, &got, t0()).await;
    assert_eq!(status(&backend, id).await, JobStatus::Completed);
    let c = counts(&backend).await;
    assert_eq!((c.running, c.pending, c.completed), (0, 0, 1));
    let mut conn = raw_connection().await;
    assert_eq!(
        keys_like(&mut conn, &prefix, ":s}:lease:*").await,
        Vec::<String>::new(),
        "the read's lease goes with its last job"
    );
}

#[tokio::test]
async fn a_job_a_read_takes_wakes_no_worker_and_one_it_cannot_does() {
    let (_, backend) = store().await;
    let reader = subscribe(&backend).await;
    // Another worker of the queue, idle without a read: it hears wake-ups only.
    let other = backend
        .subscribe(SubscribeParams {
            queues: vec!["s".into()],
            worker: None,
        })
        .await
        .unwrap();
    assert!(backend.fetch(offering(1)).await.unwrap().is_empty());
    let id = enqueue_one(&backend).await;
    let got = delivered_within(&reader, Duration::from_secs(5)).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].record.id, id);
    let woken = tokio::time::timeout(Duration::from_millis(300), other.wait()).await;
    assert!(woken.is_err(), "the read took the job: no wake-up");

    // The read is over; a job of another priority, which no read takes, wakes the workers.
    complete_all(&backend, &got, t0()).await;
    assert!(backend.fetch(offering(1)).await.unwrap().is_empty());
    enqueue_job(&backend, urgent()).await;
    tokio::time::timeout(Duration::from_secs(5), other.wait())
        .await
        .expect("woken by a job no read takes");
}

#[tokio::test]
async fn a_read_takes_no_more_jobs_than_the_places_offered() {
    let (_, backend) = store().await;
    let wakeup = subscribe(&backend).await;
    assert!(backend.fetch(offering(2)).await.unwrap().is_empty());
    let jobs: Vec<_> = (0..5).map(|_| ready("s")).collect();
    backend
        .enqueue(EnqueueParams { jobs, now: t0() })
        .await
        .unwrap();
    let got = delivered_within(&wakeup, Duration::from_secs(5)).await;
    assert_eq!(got.len(), 2, "as many as the places offered");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(wakeup.delivered().is_empty(), "one read, one delivery");
    let rest = backend.fetch(fetch(&["s"], 10, t0())).await.unwrap();
    assert_eq!(rest.len(), 3, "the others wait for a fetch");
}

#[tokio::test]
async fn a_paused_queue_gives_no_job_to_a_read_until_resumed() {
    let (_, backend) = store().await;
    let wakeup = subscribe(&backend).await;
    let pause = |paused| {
        backend.pause(PauseParams {
            queue: "s".into(),
            paused,
        })
    };
    // One job waits from before the pause; then a read starts (a worker that has not heard
    // of the pause yet fetches), and another job comes.
    let before = enqueue_one(&backend).await;
    pause(true).await.unwrap();
    assert!(backend.fetch(offering(4)).await.unwrap().is_empty());
    assert!(
        delivered_within(&wakeup, Duration::from_millis(400))
            .await
            .is_empty(),
        "a job enqueued before the pause reached a read"
    );
    let held = enqueue_one(&backend).await;
    assert!(
        delivered_within(&wakeup, Duration::from_millis(400))
            .await
            .is_empty(),
        "a job enqueued while paused reached a blocked read"
    );
    for id in [before, held] {
        assert_eq!(status(&backend, id).await, JobStatus::Pending);
    }
    assert!(backend
        .fetch(fetch(&["s"], 10, t0()))
        .await
        .unwrap()
        .is_empty());

    pause(false).await.unwrap();
    // The jobs held while paused go out in order, before those enqueued since.
    let after = enqueue_one(&backend).await;
    let mut got = delivered_within(&wakeup, Duration::from_secs(5)).await;
    got.extend(backend.fetch(fetch(&["s"], 10, t0())).await.unwrap());
    let ids: Vec<JobId> = got.iter().map(|j| j.record.id).collect();
    assert_eq!(ids, [before, held, after]);
}

#[tokio::test]
async fn a_queue_with_a_concurrency_gives_no_job_to_a_read() {
    let (_, backend) = store().await;
    let wakeup = subscribe(&backend).await;
    backend
        .set_limits(SetLimitsParams {
            queue: "s".into(),
            limits: QueueLimits::default().concurrency(1),
        })
        .await
        .unwrap();
    // A worker that has not read the limits yet offers places: its fetch starts no read, so
    // that only a fetch, which counts the running jobs, starts the queue's jobs.
    assert!(backend.fetch(offering(4)).await.unwrap().is_empty());
    let ids = [enqueue_one(&backend).await, enqueue_one(&backend).await];
    assert!(
        delivered_within(&wakeup, Duration::from_millis(400))
            .await
            .is_empty(),
        "a job of a limited queue reached a blocked read"
    );
    for id in ids {
        assert_eq!(status(&backend, id).await, JobStatus::Pending);
    }
}

#[tokio::test]
async fn ended_deliveries_end_the_read() {
    let (_, backend) = store().await;
    let wakeup = subscribe(&backend).await;
    assert!(backend.fetch(offering(1)).await.unwrap().is_empty());
    tokio::time::timeout(
        Duration::from_secs(2),
        backend.end_deliveries(EndDeliveriesParams {
            worker: "layout".into(),
            queues: vec!["s".into()],
        }),
    )
    .await
    .expect("the read ended at once")
    .unwrap();
    let id = enqueue_one(&backend).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(wakeup.delivered().is_empty(), "delivered after the end");
    assert_eq!(status(&backend, id).await, JobStatus::Pending);
}

#[tokio::test]
async fn a_fetch_that_takes_jobs_ends_the_read() {
    let (_, backend) = store().await;
    let wakeup = subscribe(&backend).await;
    assert!(backend.fetch(offering(1)).await.unwrap().is_empty());
    let urgent_id = enqueue_job(&backend, urgent()).await;
    let got = backend.fetch(offering(1)).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].record.id, urgent_id);
    // The read ends in the background.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let id = enqueue_one(&backend).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        wakeup.delivered().is_empty(),
        "delivered after a fetch took a job"
    );
    assert_eq!(status(&backend, id).await, JobStatus::Pending);
}

#[tokio::test]
async fn a_lapsed_reserved_lease_holds_no_job_and_goes() {
    let (prefix, backend) = store().await;
    // Reserved until 30 s after t0 (the worker gone, say); the read blocks for 10 s.
    assert!(backend.fetch(offering(1)).await.unwrap().is_empty());
    let mut conn = raw_connection().await;
    assert_eq!(
        keys_like(&mut conn, &prefix, ":s}:lease:*").await.len(),
        1,
        "the read reserved its call's lease"
    );
    let rescued = backend
        .rescue(RescueParams {
            target: RescueTarget::Lapsed,
            now: t0() + chrono::Duration::seconds(60),
            limit: 100,
            error: jobs_core::ErrorReport::new(jobs_core::ErrorKind::LeaseLost, "lapsed"),
        })
        .await
        .unwrap();
    assert!(rescued.is_empty(), "a reserved lease holds no job");
    assert_eq!(
        keys_like(&mut conn, &prefix, ":s}:lease:*").await,
        Vec::<String>::new(),
        "and goes"
    );
    assert_eq!(counts(&backend).await.running, 0);
}

#[tokio::test]
async fn a_corrupt_job_a_read_takes_dies_alone() {
    let (prefix, backend) = store().await;
    let wakeup = subscribe(&backend).await;
    assert!(backend.fetch(offering(4)).await.unwrap().is_empty());
    // An entry whose payload is not JSON, written as an enqueue writes one: the read takes it.
    let bad = JobId::new();
    let meta = "3|f5||bad";
    let j = format!(
        "{}{}:{}:{meta}not json {{",
        bad.0.simple(),
        t0().timestamp_micros(),
        meta.len()
    );
    let mut conn = raw_connection().await;
    add_raw_entry(&mut conn, &format!("{{{prefix}:s}}:"), bad, j).await;
    let mut dead = None;
    for _ in 0..100 {
        let r = backend.read(ReadParams { id: bad }).await.unwrap();
        if let Some(r) = r.filter(|r| r.status == JobStatus::Dead) {
            dead = Some(r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let dead = dead.expect("the corrupt job died");
    assert_eq!(dead.errors.len(), 1);
    assert_eq!(dead.errors[0].kind, jobs_core::ErrorKind::Decode);
    assert!(
        wakeup.delivered().is_empty(),
        "nothing to run was handed over"
    );
    let c = counts(&backend).await;
    assert_eq!((c.running, c.pending, c.dead), (0, 0, 1));

    // The worker's next read takes the next job as ever.
    assert!(backend.fetch(offering(4)).await.unwrap().is_empty());
    let id = enqueue_one(&backend).await;
    let got = delivered_within(&wakeup, Duration::from_secs(5)).await;
    assert_eq!(got.iter().map(|j| j.record.id).collect::<Vec<_>>(), [id]);
}
