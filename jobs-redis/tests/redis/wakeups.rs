//! Wake-up signals: an enqueue publishes only when it adds to an empty ready set, and a fetch
//! that promotes due delayed jobs publishes when some of them are left for other workers.

use std::time::Duration;

use jobs_core::{Backend, EnqueueParams, FetchParams, NewJob, Timestamp};
use jobs_redis::RedisBackend;

use crate::support::{self, signals, single_backend, t0, wake_subscription};

/// A new job of the queue `w`, due at `run_at`.
fn job(run_at: Timestamp) -> NewJob {
    support::job("w", run_at)
}

async fn enqueue(b: &RedisBackend, jobs: Vec<NewJob>) {
    b.enqueue(EnqueueParams { jobs, now: t0() }).await.unwrap();
}

async fn fetch(b: &RedisBackend, limit: usize, now: Timestamp) -> usize {
    b.fetch(FetchParams {
        ended: Vec::new(),
        known: None,
        flow: Vec::new(),
        queues: vec!["w".into()],
        limit,
        worker: "wakeups".into(),
        lease_for: Duration::from_secs(30),
        now,
        reserve: 0,
        deliver: 0,
    })
    .await
    .unwrap()
    .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueues_publish_only_into_an_empty_ready_set() {
    let b = single_backend().await;
    let (channel, _sink, mut messages) = wake_subscription(&b).await;

    // Three single enqueues and a batch: only the first found the ready set empty.
    for _ in 0..3 {
        enqueue(&b, vec![job(t0())]).await;
    }
    enqueue(&b, (0..5).map(|_| job(t0())).collect()).await;
    // A delayed job never publishes when stored.
    let later = t0() + chrono::Duration::seconds(60);
    enqueue(&b, vec![job(later)]).await;
    assert_eq!(signals(&mut messages, &channel).await, ["w"]);

    // Emptied by a fetch, the set is empty again: the next batch publishes, once.
    assert_eq!(fetch(&b, 100, t0()).await, 8);
    enqueue(&b, (0..2).map(|_| job(t0())).collect()).await;
    enqueue(&b, vec![job(t0())]).await;
    assert_eq!(signals(&mut messages, &channel).await, ["w"]);

    // The delayed job falls due: the fetch that promotes it leaves jobs behind, and says so.
    assert_eq!(fetch(&b, 2, later).await, 2);
    assert_eq!(signals(&mut messages, &channel).await, ["w"]);
    // A fetch that promotes a job and takes everything has nobody to wake.
    let latest = later + chrono::Duration::seconds(60);
    enqueue(&b, vec![job(latest)]).await;
    assert_eq!(fetch(&b, 100, latest).await, 3);
    assert!(signals(&mut messages, &channel).await.is_empty());
}
