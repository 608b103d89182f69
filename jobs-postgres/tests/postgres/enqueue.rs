//! Enqueue through a pool, a connection and a caller's transaction.

use jobs_core::{Enqueue, JobExt, JobStatus};
use jobs_postgres::PgBackend;
use sqlx::PgPool;

use crate::support::{fresh_backend, url, Record};

/// A backend in the default schema `jobs` (which `&PgPool` and `&mut PgConnection` use),
/// through `connect`, which migrates it.
async fn default_schema() -> (PgBackend, PgPool) {
    let backend = PgBackend::connect(&url()).await.expect("connect");
    let pool = backend.pool().clone();
    (backend, pool)
}

#[tokio::test]
async fn enqueue_in_a_committed_transaction_is_visible() {
    let (_backend, pool) = default_schema().await;
    let mut tx = pool.begin().await.unwrap();
    let handle = Record::new(1).enqueue(&mut *tx).await.expect("enqueue");
    // Not visible outside the transaction before it commits.
    assert!(handle.record(&pool).await.is_err());
    assert_eq!(handle.status(&mut *tx).await.unwrap(), JobStatus::Pending);
    tx.commit().await.unwrap();
    assert_eq!(handle.status(&pool).await.unwrap(), JobStatus::Pending);
}

#[tokio::test]
async fn enqueue_in_a_rolled_back_transaction_never_exists() {
    let (_backend, pool) = default_schema().await;
    let mut tx = pool.begin().await.unwrap();
    let handle = Record::new(2).enqueue(&mut *tx).await.expect("enqueue");
    tx.rollback().await.unwrap();
    let err = handle.record(&pool).await.unwrap_err();
    assert!(
        matches!(err, jobs_core::Error::NotFound(id) if id == handle.id()),
        "{err:?}"
    );
}

#[tokio::test]
async fn enqueue_on_a_connection_uses_the_backends_schema() {
    let backend = fresh_backend().await;
    let mut tx = backend.pool().begin().await.unwrap();
    let handle = Record::new(3)
        .enqueue(backend.on(&mut tx))
        .await
        .expect("enqueue");
    tx.commit().await.unwrap();
    assert_eq!(handle.status(&backend).await.unwrap(), JobStatus::Pending);
    // The pool's producer writes to `jobs`, not this schema.
    let in_jobs: Option<bool> = sqlx::query_scalar("SELECT true FROM jobs.jobs WHERE id = $1")
        .bind(handle.id().0)
        .fetch_optional(backend.pool())
        .await
        .unwrap_or(None);
    assert_eq!(in_jobs, None);
}

#[tokio::test]
async fn enqueue_many_through_the_pool_is_one_batch() {
    let (backend, pool) = default_schema().await;
    let handles = Record::enqueue_many(&pool, (0..100).map(Record::new))
        .await
        .expect("enqueue many");
    assert_eq!(handles.len(), 100);
    for handle in &handles {
        assert_eq!(handle.status(&backend).await.unwrap(), JobStatus::Pending);
    }
}

#[tokio::test]
async fn unique_keys_within_one_batch_store_one_job() {
    let backend = fresh_backend().await;
    let jobs = (0..3).map(|n| Enqueue::from(Record::new(n)).unique("same"));
    let handles = Record::enqueue_many(&backend, jobs).await.expect("enqueue");
    assert!(!handles[0].is_duplicate());
    assert!(handles[1..]
        .iter()
        .all(|h| h.is_duplicate() && h.id() == handles[0].id()));
}
