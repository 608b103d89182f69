//! Deliveries: a fetch that finds nothing offers its worker's idle places, and an enqueue into
//! an empty ready set leases its job straight to such a worker, which hears it on its
//! subscription without a fetch. The checks every delivering backend passes run from
//! `jobs_core::testing::deliveries`; these are Redis's own (its keys, a cluster, pub/sub).

use jobs_core::{AnyBackend, Backend, ErrorKind, JobStatus, QueueLimits, SetLimitsParams};
use jobs_redis::{redis, RedisBackend};

use jobs_core::testing::deliveries::{
    assert_waits, deliver_leases_new_jobs_to_an_idle_worker_one_per_place as leases_new_jobs,
    delivered, fetch, fetched, job, job_of_length, offer, pending_and_unleased, put, record,
    subscribe, wait_for, QUEUE, WORKER,
};

use crate::support::{self, cluster_backend, keys_like, raw_connection, single_backend, t0};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueue_leases_its_job_straight_to_an_idle_worker() {
    let b = single_backend().await;
    leases_new_jobs(AnyBackend::new(b.clone())).await;
    // A fetch that takes a job withdraws the offer.
    assert_eq!(fetched(&b, WORKER, 2).await.len(), 1);
    let mut conn = raw_connection().await;
    assert_eq!(
        keys_like(&mut conn, b.key_prefix(), ":conformance}:idle*").await,
        Vec::<String>::new(),
        "the offer is withdrawn"
    );
}

/// On a cluster, the delivery goes out from the queue's node and comes in through whichever
/// node the backend listens on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_delivers_across_its_nodes() {
    leases_new_jobs(AnyBackend::new(cluster_backend().await)).await;
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
    let first = put(&b, job()).await;
    assert_eq!(delivered(&wakeup).await.len(), 1);
    // Through the other instance, which heard nothing: one delivery is on its way, so of the
    // two places it says are idle, one is offered.
    assert!(fetched(&elsewhere, WORKER, 2).await.is_empty());
    let second = put(&b, job()).await;
    let third = put(&b, job()).await;
    assert_eq!(record(&b, second).await.status, JobStatus::Running);
    assert!(pending_and_unleased(&record(&b, third).await));
    // Through its own, which heard both: both places are offered again.
    assert_eq!(delivered(&wakeup).await.len(), 1);
    let _ = b.fetch(support::fetch(&[QUEUE], 10, t0())).await.unwrap();
    offer(&b, 2).await;
    for _ in 0..2 {
        let id = put(&b, job()).await;
        assert_eq!(record(&b, id).await.status, JobStatus::Running);
    }
    assert_eq!(record(&b, first).await.status, JobStatus::Running);
}

/// A payload too long to send over pub/sub waits to be fetched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_payload_is_fetched() {
    let b = single_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    offer(&b, 2).await;
    let id = put(&b, job_of_length(70_000)).await;
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
    let id = put(&b, job()).await;
    assert_eq!(record(&b, id).await.status, JobStatus::Running);
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
    let corrupt = put(&b, job()).await;
    let leased = b.fetch(fetch(WORKER, 0)).await.unwrap();
    let leased_job = &leased[0];
    let stored = record(&b, corrupt).await;
    let message = serde_json::json!({
        "w": WORKER,
        "q": QUEUE,
        "i": corrupt.0.simple().to_string(),
        "t": leased_job.token.0.simple().to_string(),
        "x": stored.lease.as_ref().unwrap().expires_at.timestamp_micros().to_string(),
        "f": ["s", "p", "c", "1", "pr", "10", "ra", "1", "m", "3|f1000|"],
        "p": "not json {",
    });
    publish(&channel, &message.to_string()).await;
    wait_for(&b, corrupt, "the job got there", |r| {
        r.status == JobStatus::Dead
    })
    .await;
    let r = record(&b, corrupt).await;
    assert_eq!(r.errors.len(), 1);
    assert_eq!(r.errors[0].kind, ErrorKind::Decode);
    assert!(
        wakeup.delivered().is_empty(),
        "nothing handed to the worker"
    );

    offer(&b, 1).await;
    let good = put(&b, job()).await;
    let got = delivered(&wakeup).await;
    assert_eq!(got.iter().map(|j| j.record.id).collect::<Vec<_>>(), [good]);
}

/// The checks every delivering backend passes (see `jobs_core::testing::deliveries`).
mod shared {
    jobs_core::deliveries!(crate::support::single_backend);
}
