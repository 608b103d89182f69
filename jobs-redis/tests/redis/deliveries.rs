//! Deliveries: a fetch that finds nothing offers its worker's idle places, and an enqueue into
//! an empty ready set leases its job straight to such a worker, which hears it on its
//! subscription without a fetch. The checks every delivering backend passes run from
//! `jobs_core::testing::deliveries`; these are Redis's own (its keys, a cluster, pub/sub).

use std::time::Duration;

use jobs_core::{
    Backend, CompleteParams, Completion, EnqueueParams, ErrorKind, FetchParams, JobId, JobRecord,
    JobStatus, KnownJob, LeasedJob, NewJob, QueueLimits, ReadParams, SetLimitsParams,
    SubscribeParams, Timestamp, Wakeup,
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

/// A max depth alone holds no job back from a fetch: a bounded queue delivers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounded_queue_delivers() {
    let b = single_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    b.set_limits(SetLimitsParams {
        queue: QUEUE.into(),
        limits: QueueLimits::default().max_depth(10),
    })
    .await
    .unwrap();
    offer(&b, 4).await;
    let id = enqueue(&b, support::job(QUEUE, t0())).await;
    assert_eq!(read(&b, id).await.status, JobStatus::Running);
    assert_eq!(delivered(&wakeup).await.len(), 1);
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

/// The checks every delivering backend passes (see `jobs_core::testing::deliveries`).
mod shared {
    jobs_core::deliveries!(crate::support::single_backend);
}
