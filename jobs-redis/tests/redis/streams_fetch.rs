//! The fetch's transaction on the streams layout (`jobs-redis/src/streams/fetch.rs`): a fetch
//! whose next entries are the queue's stream `x` leases them through its plain `XREADGROUP`;
//! one that must read returned jobs first, or that finds the queue paused, reads through its
//! script and leaves `x` where it was; a server that lost the library before the transaction
//! leases what its read took; an `x` left hidden by a transaction that failed is named back
//! before anything uses it.

use jobs_core::{
    Backend, EnqueueParams, JobId, LeasedJob, PauseParams, Release, ReleaseParams, Timestamp,
};
use jobs_redis::{redis, RedisBackend};

use crate::streams::{counts, put, ready, store};
use crate::support::{
    at, complete_all, fetch, fresh_prefix, keys_like, raw_connection, redis_cli, t0, Server,
};

/// Enqueues `n` jobs of queue `s`, due now; their ids, in order.
async fn enqueue(backend: &RedisBackend, n: usize) -> Vec<JobId> {
    put(backend, (0..n).map(|_| ready("s")).collect()).await
}

/// Fetches up to `limit` jobs of queue `s` at `now`.
async fn take(backend: &RedisBackend, limit: usize, now: Timestamp) -> Vec<LeasedJob> {
    backend.fetch(fetch(&["s"], limit, now)).await.unwrap()
}

fn ids(jobs: &[LeasedJob]) -> Vec<JobId> {
    jobs.iter().map(|j| j.record.id).collect()
}

/// Which of queue `s`'s keys `x` and `xhidden` exist under `prefix`, by their last part.
async fn stream_keys(prefix: &str) -> Vec<String> {
    let mut conn = raw_connection().await;
    keys_like(&mut conn, prefix, ":s}:x*")
        .await
        .into_iter()
        .filter_map(|key| key.rsplit_once("}:").map(|(_, name)| name.to_string()))
        .filter(|name| name == "x" || name == "xhidden")
        .collect()
}

#[tokio::test]
async fn a_fetch_leases_the_stream_through_its_read_and_writes_the_calls_lease() {
    let (prefix, backend) = store().await;
    let enqueued = enqueue(&backend, 3).await;
    let got = take(&backend, 10, t0()).await;
    assert_eq!(ids(&got), enqueued, "in the order they were enqueued");

    let mut conn = raw_connection().await;
    let leases = keys_like(&mut conn, &prefix, ":s}:lease:*").await;
    let [lease] = &leases[..] else {
        panic!("one lease for the call: {leases:?}");
    };
    let mut fields: Vec<String> = redis::cmd("HKEYS")
        .arg(lease)
        .query_async(&mut conn)
        .await
        .unwrap();
    fields.sort();
    assert_eq!(fields, ["f", "k", "l", "s", "w", "x"], "no `o` left");
    assert_eq!(stream_keys(&prefix).await, ["x"]);
    let c = counts(&backend).await;
    assert_eq!((c.pending, c.running), (0, 3));

    complete_all(&backend, &got, at(1)).await;
    let c = counts(&backend).await;
    assert_eq!((c.running, c.completed), (0, 3));
}

#[tokio::test]
async fn returned_jobs_lease_before_the_stream_which_stays_in_place() {
    let (prefix, backend) = store().await;
    let enqueued = enqueue(&backend, 3).await;
    let first = take(&backend, 1, t0()).await;
    assert_eq!(ids(&first), enqueued[..1]);
    let items = vec![Release {
        lease: first[0].lease(),
        run_at: None,
    }];
    let released = backend
        .release(ReleaseParams { items, now: at(1) })
        .await
        .unwrap();
    assert_eq!(released, [true]);

    // A call reads one stream: the returned job's first, alone.
    let again = take(&backend, 10, at(2)).await;
    assert_eq!(ids(&again), enqueued[..1]);
    assert_eq!(stream_keys(&prefix).await, ["x"]);
    let rest = take(&backend, 10, at(3)).await;
    assert_eq!(ids(&rest), enqueued[1..]);
    assert_eq!(stream_keys(&prefix).await, ["x"]);
    let c = counts(&backend).await;
    assert_eq!((c.pending, c.running), (0, 3));
}

#[tokio::test]
async fn a_paused_queue_leases_nothing_and_keeps_its_stream() {
    let (prefix, backend) = store().await;
    let enqueued = enqueue(&backend, 2).await;
    let pause = |paused| PauseParams {
        queue: "s".into(),
        paused,
    };
    backend.pause(pause(true)).await.unwrap();
    assert!(take(&backend, 10, t0()).await.is_empty());
    assert_eq!(stream_keys(&prefix).await, ["x"]);
    assert_eq!(counts(&backend).await.pending, 2);

    backend.pause(pause(false)).await.unwrap();
    assert_eq!(ids(&take(&backend, 10, t0()).await), enqueued);
}

/// As if the last command of a fetch's transaction had failed: `x` renamed `xhidden`.
async fn hide(prefix: &str) {
    let mut conn = raw_connection().await;
    let _: () = redis::cmd("RENAME")
        .arg(format!("{{{prefix}:s}}:x"))
        .arg(format!("{{{prefix}:s}}:xhidden"))
        .query_async(&mut conn)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_stream_left_hidden_is_named_back_by_the_next_fetch_or_enqueue() {
    let (prefix, backend) = store().await;
    let mut enqueued = enqueue(&backend, 2).await;
    hide(&prefix).await;
    assert_eq!(stream_keys(&prefix).await, ["xhidden"]);
    assert_eq!(ids(&take(&backend, 1, t0()).await), enqueued[..1]);
    assert_eq!(stream_keys(&prefix).await, ["x"]);

    hide(&prefix).await;
    enqueued.extend(enqueue(&backend, 1).await);
    assert_eq!(stream_keys(&prefix).await, ["x"]);
    assert_eq!(ids(&take(&backend, 10, t0()).await), enqueued[1..]);
    let c = counts(&backend).await;
    assert_eq!((c.pending, c.running), (0, 3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_on_a_server_that_lost_the_library_leases_what_its_read_took() {
    let server = Server::start();
    let url = format!("{}?prefix={}&layout=streams", server.url(), fresh_prefix());
    let backend = RedisBackend::connect(&url).await.unwrap();
    // A queue without a stream yet: the read fails as the scripts do, and takes nothing.
    assert!(take(&backend, 10, t0()).await.is_empty());
    assert_eq!(redis_cli(server.port, &["FUNCTION", "FLUSH"]).trim(), "OK");
    assert!(take(&backend, 10, t0()).await.is_empty());

    let enqueued = enqueue(&backend, 3).await;
    assert_eq!(redis_cli(server.port, &["FUNCTION", "FLUSH"]).trim(), "OK");

    let got = take(&backend, 10, t0()).await;
    assert_eq!(ids(&got), enqueued);
    let c = counts(&backend).await;
    assert_eq!((c.pending, c.running), (0, 3));
    complete_all(&backend, &got, at(1)).await;
    let c = counts(&backend).await;
    assert_eq!((c.running, c.completed), (0, 3));

    // A job that waits for its run_at is not `x`'s, and the read takes nothing: the fetch
    // loads the library and runs again, which adds the job to `x` and leases it.
    let mut later = ready("s");
    later.run_at = at(1_000);
    let id = later.id;
    backend
        .enqueue(EnqueueParams {
            jobs: vec![later],
            now: t0(),
        })
        .await
        .unwrap();
    assert_eq!(redis_cli(server.port, &["FUNCTION", "FLUSH"]).trim(), "OK");
    assert_eq!(ids(&take(&backend, 10, at(2_000)).await), [id]);
}
