//! LISTEN/NOTIFY wake-ups, across pools, and after the listener's connection is killed.

use std::time::Duration;

use jobs_core::{Backend, JobExt, SubscribeParams, Wakeup};
use jobs_postgres::PgBackend;

use crate::support::{backend_in, fresh_backend, Record};

/// A wake-up signal for `queue`.
async fn subscribe(backend: &PgBackend, queue: &str) -> Wakeup {
    let queues = vec![queue.to_string()];
    backend
        .subscribe(SubscribeParams {
            queues,
            worker: None,
        })
        .await
        .expect("subscribe")
}

async fn woken(wakeup: &Wakeup, within: Duration) -> bool {
    tokio::time::timeout(within, wakeup.wait()).await.is_ok()
}

/// The pid of the backend's listener connection once it is listening.
async fn listener_pid(backend: &PgBackend, not: Option<i32>) -> i32 {
    let name = format!("jobs-listener:{}", backend.schema_name());
    for _ in 0..500 {
        let pid: Option<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity
             WHERE application_name = $1 AND query LIKE 'LISTEN%' AND pid <> $2",
        )
        .bind(&name)
        .bind(not.unwrap_or(0))
        .fetch_optional(backend.pool())
        .await
        .expect("pg_stat_activity");
        if let Some(pid) = pid {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no listener for {name}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueue_elsewhere_wakes_subscribers_of_its_queue_only() {
    let backend = fresh_backend().await;
    let producer = backend_in(backend.schema_name()).await;
    let record = subscribe(&backend, "record").await;
    let other = subscribe(&backend, "other").await;
    Record::new(1).enqueue(&producer).await.unwrap();
    assert!(woken(&record, Duration::from_secs(2)).await);
    assert!(!woken(&other, Duration::from_millis(100)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_jobs_do_not_wake_anyone() {
    let backend = fresh_backend().await;
    let wakeup = subscribe(&backend, "record").await;
    Record::new(1)
        .delay(Duration::from_secs(3600))
        .enqueue(&backend)
        .await
        .unwrap();
    assert!(!woken(&wakeup, Duration::from_millis(200)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_reconnects_by_itself() {
    let backend = fresh_backend().await;
    let producer = backend_in(backend.schema_name()).await;
    let wakeup = subscribe(&backend, "record").await;
    let first = listener_pid(&backend, None).await;

    let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(first)
        .fetch_one(backend.pool())
        .await
        .unwrap();
    assert!(killed);
    // Subscribers are woken once the listener is back, as signals may have been missed.
    let second = listener_pid(&backend, Some(first)).await;
    assert!(woken(&wakeup, Duration::from_secs(5)).await);
    tokio::time::sleep(Duration::from_millis(50)).await;
    while woken(&wakeup, Duration::from_millis(50)).await {}

    Record::new(2).enqueue(&producer).await.unwrap();
    assert!(
        woken(&wakeup, Duration::from_secs(2)).await,
        "listener {second} heard nothing"
    );
}

/// Notifications heard on `listener` until none came for 300 ms: their payloads.
async fn heard(listener: &mut sqlx::postgres::PgListener) -> Vec<String> {
    let mut payloads = Vec::new();
    while let Ok(n) = tokio::time::timeout(Duration::from_millis(300), listener.recv()).await {
        payloads.push(
            n.expect("the listener stays connected")
                .payload()
                .to_owned(),
        );
    }
    payloads
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueues_outside_a_transaction_notify_after_commit_and_together() {
    let backend = fresh_backend().await;
    let mut listener = sqlx::postgres::PgListener::connect_with(backend.pool())
        .await
        .unwrap();
    listener.listen(backend.schema_name()).await.unwrap();

    // The signal goes out after the commit: whoever hears it finds the job.
    Record::new(1).enqueue(&backend).await.unwrap();
    let first = tokio::time::timeout(Duration::from_secs(2), listener.recv())
        .await
        .expect("a notification")
        .unwrap();
    assert_eq!(first.payload(), "record");
    let stored: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM {}.jobs",
        backend.schema_name()
    ))
    .fetch_one(backend.pool())
    .await
    .unwrap();
    assert_eq!(stored, 1);
    assert!(heard(&mut listener).await.is_empty());

    // A hundred enqueues at once: each is followed by a signal, but they go out together (the
    // notifier's own test pins how; here, only that fewer went out than jobs came in).
    let mut all = tokio::task::JoinSet::new();
    for i in 2..102 {
        let backend = backend.clone();
        all.spawn(async move { Record::new(i).enqueue(&backend).await.map(|_| ()) });
    }
    while let Some(done) = all.join_next().await {
        done.unwrap().unwrap();
    }
    let burst = heard(&mut listener).await;
    assert!(!burst.is_empty());
    assert!(
        burst.len() < 100,
        "{} notifications for 100 jobs",
        burst.len()
    );
    assert!(burst.iter().all(|p| p == "record"), "{burst:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueue_in_a_transaction_wakes_when_it_commits() {
    let backend = fresh_backend().await;
    let wakeup = subscribe(&backend, "record").await;
    let mut tx = backend.pool().begin().await.unwrap();
    Record::new(1).enqueue(backend.on(&mut tx)).await.unwrap();
    assert!(!woken(&wakeup, Duration::from_millis(200)).await);
    tx.commit().await.unwrap();
    assert!(woken(&wakeup, Duration::from_secs(2)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueue_transaction_wakes_after_it_commits_and_never_when_rolled_back() {
    let backend = fresh_backend().await;
    let wakeup = subscribe(&backend, "record").await;

    let mut tx = backend.begin().await.expect("begin");
    let kept = Record::new(1).enqueue(&mut tx).await.expect("enqueue");
    assert_eq!(
        kept.status(&mut tx).await.unwrap(),
        jobs_core::JobStatus::Pending
    );
    assert!(
        kept.record(&backend).await.is_err(),
        "visible before the commit"
    );
    assert!(!woken(&wakeup, Duration::from_millis(200)).await);
    tx.commit().await.expect("commit");
    assert!(woken(&wakeup, Duration::from_secs(2)).await);
    assert_eq!(
        kept.status(&backend).await.unwrap(),
        jobs_core::JobStatus::Pending
    );

    let mut tx = backend.begin().await.expect("begin");
    let dropped = Record::new(2).enqueue(&mut tx).await.expect("enqueue");
    tx.rollback().await.expect("rollback");
    assert!(!woken(&wakeup, Duration::from_millis(300)).await);
    assert!(dropped.record(&backend).await.is_err());

    // Dropped without a commit: rolled back, and no signal either.
    let mut tx = backend.begin().await.expect("begin");
    let forgotten = Record::new(3).enqueue(&mut tx).await.expect("enqueue");
    drop(tx);
    assert!(!woken(&wakeup, Duration::from_millis(300)).await);
    assert!(forgotten.record(&backend).await.is_err());
}

/// Delayed jobs in an enqueue transaction wake no one when it commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueue_transaction_of_delayed_jobs_wakes_no_one() {
    let backend = fresh_backend().await;
    let wakeup = subscribe(&backend, "record").await;
    let mut tx = backend.begin().await.expect("begin");
    Record::new(1)
        .delay(Duration::from_secs(3600))
        .enqueue(&mut tx)
        .await
        .expect("enqueue");
    tx.commit().await.expect("commit");
    assert!(!woken(&wakeup, Duration::from_millis(300)).await);
}
