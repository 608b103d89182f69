//! LISTEN/NOTIFY wake-ups, across pools, and after the listener's connection is killed.

use std::time::Duration;

use jobs_core::{Backend, JobExt, Wakeup};
use jobs_postgres::PgBackend;

use crate::support::{backend_in, fresh_backend, Record};

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
    let record = backend.subscribe(&["record".to_string()]).await.unwrap();
    let other = backend.subscribe(&["other".to_string()]).await.unwrap();
    Record::new(1).enqueue(&producer).await.unwrap();
    assert!(woken(&record, Duration::from_secs(2)).await);
    assert!(!woken(&other, Duration::from_millis(100)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_jobs_do_not_wake_anyone() {
    let backend = fresh_backend().await;
    let wakeup = backend.subscribe(&["record".to_string()]).await.unwrap();
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
    let wakeup = backend.subscribe(&["record".to_string()]).await.unwrap();
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
