//! Deliveries: a fetch that finds nothing offers its worker's idle places, and an enqueue into
//! an empty ready set leases its job straight to such a worker, which hears it on its
//! subscription without a fetch; what no offer may take, and how a stopping worker ends them.

use std::time::Duration;

use jobs_core::{
    Backend, CompleteParams, Completion, EndDeliveriesParams, EnqueueParams, ErrorKind,
    ErrorReport, FetchParams, JobId, JobRecord, JobStatus, KnownJob, LeasedJob, NewJob,
    PauseParams, QueueLimits, ReadParams, RescueParams, RescueTarget, SetLimitsParams,
    SubscribeParams, Timestamp, Wakeup, Worker,
};
use jobs_redis::{redis, RedisBackend};
use serde_json::value::RawValue;

use crate::support::{self, cluster_backend, keys_like, raw_connection, single_backend, t0};

const QUEUE: &str = "d";
const WORKER: &str = "idle-worker";

/// `worker`'s subscription to [`QUEUE`].
async fn subscribe(b: &RedisBackend, worker: &str) -> Wakeup {
    b.subscribe(SubscribeParams {
        queues: vec![QUEUE.into()],
        worker: Some(worker.into()),
    })
    .await
    .unwrap()
}

/// A fetch by `worker` of the jobs named `layout` up to version 1, offering `places`.
fn fetch(worker: &str, places: usize) -> FetchParams {
    FetchParams {
        known: Some(vec![KnownJob {
            name: "layout".into(),
            version: 1,
        }]),
        worker: worker.into(),
        deliver: places,
        ..support::fetch(&[QUEUE], 10, t0())
    }
}

/// Fetches for `worker` (offering `places`); the jobs it leased.
async fn fetched(b: &RedisBackend, worker: &str, places: usize) -> Vec<LeasedJob> {
    b.fetch(fetch(worker, places)).await.unwrap()
}

/// A fetch by [`WORKER`] that finds nothing, and so offers `places` (see [`fetch`]).
async fn offer(b: &RedisBackend, places: usize) {
    assert!(
        fetched(b, WORKER, places).await.is_empty(),
        "nothing to fetch"
    );
}

async fn enqueue(b: &RedisBackend, job: NewJob) -> JobId {
    enqueue_at(b, job, t0()).await
}

async fn enqueue_at(b: &RedisBackend, job: NewJob, now: Timestamp) -> JobId {
    let id = job.id;
    b.enqueue(EnqueueParams {
        jobs: vec![job],
        now,
    })
    .await
    .unwrap();
    id
}

async fn read(b: &RedisBackend, id: JobId) -> JobRecord {
    b.read(ReadParams { id }).await.unwrap().expect("stored")
}

/// The jobs delivered to `wakeup` once some came, or none within a second. (A wake-up signal
/// wakes it too.)
async fn delivered(wakeup: &Wakeup) -> Vec<LeasedJob> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
    loop {
        let got = wakeup.delivered();
        if !got.is_empty() {
            return got;
        }
        if tokio::time::timeout_at(deadline, wakeup.wait())
            .await
            .is_err()
        {
            return got;
        }
    }
}

/// Waits until job `id` reads as `condition` says.
async fn wait_until(b: &RedisBackend, id: JobId, condition: impl Fn(&JobRecord) -> bool) {
    for _ in 0..100 {
        if condition(&read(b, id).await) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("job {id} never got there: {:?}", read(b, id).await);
}

/// Job `id` waits to be fetched: pending, unattempted, unleased, and not delivered.
async fn assert_waits(b: &RedisBackend, wakeup: &Wakeup, id: JobId) {
    assert!(pending_and_unleased(&read(b, id).await));
    assert!(delivered(wakeup).await.is_empty());
}

fn pending_and_unleased(r: &JobRecord) -> bool {
    r.status == JobStatus::Pending && r.attempt == 0 && r.lease.is_none()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueue_leases_its_job_straight_to_an_idle_worker() {
    let b = single_backend().await;
    leases_straight_away(&b).await;
    // A fetch that takes a job withdraws the offer.
    assert_eq!(fetched(&b, WORKER, 2).await.len(), 1);
    let mut conn = raw_connection().await;
    assert_eq!(
        keys_like(&mut conn, b.key_prefix(), ":d}:idle*").await,
        Vec::<String>::new(),
        "the offer is withdrawn"
    );
}

/// On a cluster, the delivery goes out from the queue's node and comes in through whichever
/// node the backend listens on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_delivers_across_its_nodes() {
    leases_straight_away(&cluster_backend().await).await;
}

/// An idle worker offering two places gets the next two jobs enqueued, leased to it, and the
/// third waits to be fetched.
async fn leases_straight_away(b: &RedisBackend) {
    let wakeup = subscribe(b, WORKER).await;
    offer(b, 2).await;

    let first = enqueue(b, support::job(QUEUE, t0())).await;
    // Leased by the enqueue itself, before the worker heard of it.
    let stored = read(b, first).await;
    assert_eq!((stored.status, stored.attempt), (JobStatus::Running, 1));
    assert_eq!(stored.started_at, Some(stored.created_at));
    let lease = stored.lease.clone().expect("leased");
    assert_eq!(lease.worker, WORKER);

    let got = delivered(&wakeup).await;
    let [job] = &got[..] else {
        panic!("one job delivered: {got:?}");
    };
    assert_eq!((job.record.id, job.token), (first, lease.token));
    assert_eq!(
        serde_json::to_value(&job.record).unwrap(),
        serde_json::to_value(&stored).unwrap(),
        "the delivery reads as the store does"
    );

    // The lease is a real one: the job completes under it.
    let done = b
        .complete(CompleteParams {
            items: vec![Completion {
                lease: job.lease(),
                result: RawValue::from_string("1".into()).unwrap(),
            }],
            now: t0(),
        })
        .await
        .unwrap();
    assert_eq!(done, [true]);

    // The second place takes the next job; with none left, the third waits to be fetched.
    let second = enqueue(b, support::job(QUEUE, t0())).await;
    let got = delivered(&wakeup).await;
    assert_eq!(
        got.iter().map(|j| j.record.id).collect::<Vec<_>>(),
        [second]
    );
    assert_ne!(got[0].token, job.token, "each delivery has its own token");
    let third = enqueue(b, support::job(QUEUE, t0())).await;
    assert_waits(b, &wakeup, third).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_withdraws_its_workers_offer() {
    let b = single_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    offer(&b, 4).await;
    offer(&b, 0).await;
    let id = enqueue(&b, support::job(QUEUE, t0())).await;
    assert_waits(&b, &wakeup, id).await;
    // Fetching, the worker takes it itself.
    let leased = fetched(&b, WORKER, 4).await;
    assert_eq!(leased.iter().map(|j| j.record.id).collect::<Vec<_>>(), [id]);
}

/// An offer stands while its worker finds nothing, but its places are recounted: the worker's
/// idle places less the deliveries it has not heard of yet (here: made to another instance).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offer_counts_the_deliveries_on_their_way() {
    let b = single_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    let elsewhere = RedisBackend::connect(&support::redis_url())
        .await
        .unwrap()
        .prefix(b.key_prefix())
        .unwrap();
    let _listening = subscribe(&elsewhere, "another").await;

    offer(&b, 2).await;
    let first = enqueue(&b, support::job(QUEUE, t0())).await;
    assert_eq!(delivered(&wakeup).await.len(), 1);
    // Through the other instance, which heard nothing: one delivery is on its way, so of the
    // two places it says are idle, one is offered.
    assert!(fetched(&elsewhere, WORKER, 2).await.is_empty());
    let second = enqueue(&b, support::job(QUEUE, t0())).await;
    let third = enqueue(&b, support::job(QUEUE, t0())).await;
    assert_eq!(read(&b, second).await.status, JobStatus::Running);
    assert!(pending_and_unleased(&read(&b, third).await));
    // Through its own, which heard both: both places are offered again.
    assert_eq!(delivered(&wakeup).await.len(), 1);
    let _ = b.fetch(support::fetch(&[QUEUE], 10, t0())).await.unwrap();
    offer(&b, 2).await;
    for _ in 0..2 {
        let id = enqueue(&b, support::job(QUEUE, t0())).await;
        assert_eq!(read(&b, id).await.status, JobStatus::Running);
    }
    assert_eq!(read(&b, first).await.status, JobStatus::Running);
}

/// A gone worker's offer is withdrawn when its jobs are rescued; a fetch across queues
/// withdraws the fetching worker's offer (such a worker offers nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rescues_and_fetches_across_queues_withdraw_offers() {
    let b = single_backend().await;
    let _wakeup = subscribe(&b, WORKER).await;
    offer(&b, 2).await;
    b.rescue(RescueParams {
        target: RescueTarget::Workers(vec![WORKER.into()]),
        now: t0(),
        limit: 100,
        error: ErrorReport::new(ErrorKind::LeaseLost, "gone"),
    })
    .await
    .unwrap();
    let id = enqueue(&b, support::job(QUEUE, t0())).await;
    assert!(
        pending_and_unleased(&read(&b, id).await),
        "went to a gone worker"
    );
    assert_eq!(fetched(&b, WORKER, 0).await.len(), 1);

    offer(&b, 2).await;
    let across = FetchParams {
        queues: vec![QUEUE.into(), "e".into()],
        ..fetch(WORKER, 2)
    };
    assert!(b.fetch(across).await.unwrap().is_empty());
    let id = enqueue(&b, support::job(QUEUE, t0())).await;
    assert!(
        pending_and_unleased(&read(&b, id).await),
        "offered while fetching across"
    );
}

/// A payload too long to send over pub/sub waits to be fetched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_payload_is_fetched() {
    let b = single_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    offer(&b, 2).await;
    let long = format!(r#"{{"text":"{}"}}"#, "x".repeat(70_000));
    let id = enqueue(
        &b,
        NewJob {
            payload: RawValue::from_string(long).unwrap(),
            ..support::job(QUEUE, t0())
        },
    )
    .await;
    assert_waits(&b, &wakeup, id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_offer_takes_a_job_it_may_not_run() {
    let b = single_backend().await;
    let wakeup = subscribe(&b, WORKER).await;

    // A name the worker does not run, and a version newer than it knows.
    offer(&b, 4).await;
    let other = enqueue(
        &b,
        NewJob {
            name: "other".into(),
            ..support::job(QUEUE, t0())
        },
    )
    .await;
    assert!(pending_and_unleased(&read(&b, other).await));
    // The ready set holds it: another worker empties it, so that the next enqueue looks at
    // the offer again.
    let taken = b.fetch(support::fetch(&[QUEUE], 10, t0())).await.unwrap();
    assert_eq!(
        taken.iter().map(|j| j.record.id).collect::<Vec<_>>(),
        [other]
    );
    let newer = NewJob {
        version: 2,
        ..support::job(QUEUE, t0())
    };
    let newer = enqueue(&b, newer).await;
    assert_waits(&b, &wakeup, newer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_or_limited_queue_delivers_nothing() {
    let b = single_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    let pause = |paused| PauseParams {
        queue: QUEUE.into(),
        paused,
    };

    offer(&b, 4).await;
    b.pause(pause(true)).await.unwrap();
    let held = enqueue(&b, support::job(QUEUE, t0())).await;
    assert!(pending_and_unleased(&read(&b, held).await), "paused");
    b.pause(pause(false)).await.unwrap();
    assert_eq!(fetched(&b, WORKER, 0).await.len(), 1);

    let limits = |limits| SetLimitsParams {
        queue: QUEUE.into(),
        limits,
    };
    offer(&b, 4).await;
    b.set_limits(limits(QueueLimits::default().concurrency(5)))
        .await
        .unwrap();
    let held = enqueue(&b, support::job(QUEUE, t0())).await;
    assert!(pending_and_unleased(&read(&b, held).await), "limited");
    assert!(delivered(&wakeup).await.is_empty());

    // A max depth alone holds no job back from a fetch: the queue delivers again.
    b.set_limits(limits(QueueLimits::default().max_depth(10)))
        .await
        .unwrap();
    assert_eq!(fetched(&b, WORKER, 0).await.len(), 1);
    offer(&b, 4).await;
    let id = enqueue(&b, support::job(QUEUE, t0())).await;
    assert_eq!(read(&b, id).await.status, JobStatus::Running);
    assert_eq!(delivered(&wakeup).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ending_the_deliveries_waits_for_those_under_way() {
    let b = single_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    offer(&b, 4).await;
    let sent = enqueue(&b, support::job(QUEUE, t0())).await;
    b.end_deliveries(EndDeliveriesParams {
        worker: WORKER.into(),
        queues: vec![QUEUE.into(), QUEUE.into()],
    })
    .await
    .unwrap();
    // Once it returns, the delivery before it has arrived: no wait.
    let got = wakeup.delivered();
    assert_eq!(got.iter().map(|j| j.record.id).collect::<Vec<_>>(), [sent]);
    let after = enqueue(&b, support::job(QUEUE, t0())).await;
    assert!(pending_and_unleased(&read(&b, after).await));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_delivered_to_a_worker_gone_is_handed_back() {
    let b = single_backend().await;
    drop(subscribe(&b, WORKER).await);
    // Another subscription keeps the listener; the worker's own is gone.
    let _other = subscribe(&b, "another").await;
    offer(&b, 1).await;
    let id = enqueue(&b, support::job(QUEUE, t0())).await;
    wait_until(&b, id, pending_and_unleased).await;
    assert_eq!(fetched(&b, "another", 0).await.len(), 1);
}

/// The channel a backend's deliveries come on, as the server lists it.
async fn delivery_channel(b: &RedisBackend) -> String {
    let mut conn = raw_connection().await;
    let channels: Vec<String> = redis::cmd("PUBSUB")
        .arg("CHANNELS")
        .arg(format!("{}:deliver:*", b.key_prefix()))
        .query_async(&mut conn)
        .await
        .unwrap();
    let [channel] = &channels[..] else {
        panic!("one delivery channel: {channels:?}");
    };
    channel.clone()
}

async fn publish(channel: &str, message: &str) {
    let mut conn = raw_connection().await;
    let heard: i64 = redis::cmd("PUBLISH")
        .arg(channel)
        .arg(message)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(heard, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_delivery_harms_no_other_and_a_corrupt_job_dies() {
    let b = single_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    let channel = delivery_channel(&b).await;

    // Not JSON: ignored, and the channel still delivers.
    publish(&channel, "not json {").await;
    // A job leased by a fetch, delivered with a payload that is not JSON: failed as dead, as a
    // fetch fails a corrupt job.
    let corrupt = enqueue(&b, support::job(QUEUE, t0())).await;
    let leased = fetched(&b, WORKER, 0).await;
    let job = &leased[0];
    let stored = read(&b, corrupt).await;
    let message = serde_json::json!({
        "w": WORKER,
        "q": QUEUE,
        "i": corrupt.0.simple().to_string(),
        "t": job.token.0.simple().to_string(),
        "x": stored.lease.as_ref().unwrap().expires_at.timestamp_micros().to_string(),
        "f": ["s", "p", "c", "1", "pr", "10", "ra", "1", "m", "3|f1000|"],
        "p": "not json {",
    });
    publish(&channel, &message.to_string()).await;
    wait_until(&b, corrupt, |r| r.status == JobStatus::Dead).await;
    let r = read(&b, corrupt).await;
    assert_eq!(r.errors.len(), 1);
    assert_eq!(r.errors[0].kind, ErrorKind::Decode);
    assert!(
        wakeup.delivered().is_empty(),
        "nothing handed to the worker"
    );

    offer(&b, 1).await;
    let good = enqueue(&b, support::job(QUEUE, t0())).await;
    let got = delivered(&wakeup).await;
    assert_eq!(got.iter().map(|j| j.record.id).collect::<Vec<_>>(), [good]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_worker_runs_a_new_job_without_fetching_it() {
    let b = single_backend().await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = Worker::new(b.clone())
        .register::<jobs_core::testing::Echo>()
        .queues(["conformance"])
        .concurrency(2);
    let running = tokio::spawn(worker.run_until(async {
        let _ = stopped.await;
    }));
    // Long enough for its start and its first, empty, fetch.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let payload = RawValue::from_string(r#"{"n":21}"#.into()).unwrap();
    let now = chrono::Utc::now();
    let job = NewJob {
        name: "conformance.echo".into(),
        payload,
        ..support::job("conformance", now)
    };
    let id = enqueue_at(&b, job, now).await;
    wait_until(&b, id, |r| r.status == JobStatus::Completed).await;
    let r = read(&b, id).await;
    assert_eq!(r.result.as_ref().map(|v| v.get()), Some("42"));
    assert_eq!(r.started_at, Some(r.created_at), "leased by its enqueue");
    let _ = stop.send(());
    running.await.unwrap().unwrap();
    let mut conn = raw_connection().await;
    assert_eq!(
        keys_like(&mut conn, b.key_prefix(), ":conformance}:idle*").await,
        Vec::<String>::new(),
        "a stopped worker leaves no offer"
    );
}
