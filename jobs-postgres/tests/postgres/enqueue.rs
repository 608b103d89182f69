//! Enqueue through the backend, a pool and a caller's transaction: into the backend's schema,
//! with tags, unique keys deduplicated within a batch.

use jobs_core::{
    AnyBackend, Backend, Enqueue, Error, JobExt, JobStatus, MemoryBackend, ReadParams,
};
use jobs_postgres::{PgBackend, PostgresExt};

use crate::support::{
    fresh_backend, new_job, new_schema, pool, put, rows_in, t0, url_with, Record,
};

/// Whether job `id` is stored in `schema`, seen from outside any transaction.
async fn stored_in(backend: &PgBackend, schema: &str, id: jobs_core::JobId) -> bool {
    sqlx::query_scalar::<_, bool>(&format!(
        "SELECT EXISTS (SELECT 1 FROM \"{schema}\".jobs WHERE id = $1)"
    ))
    .bind(id.0)
    .fetch_one(backend.pool())
    .await
    .expect("look the job up")
}

#[tokio::test]
async fn an_enqueue_in_a_committed_transaction_exists_once_it_commits() {
    let backend = fresh_backend().await;
    let mut tx = backend.pool().begin().await.unwrap();
    let handle = Record::new(1)
        .enqueue(backend.on(&mut tx))
        .await
        .expect("enqueue");
    assert!(
        handle.record(&backend).await.is_err(),
        "visible before the commit"
    );
    let inside = handle.status(backend.on(&mut tx)).await.unwrap();
    assert_eq!(inside, JobStatus::Pending);
    tx.commit().await.unwrap();
    assert_eq!(handle.status(&backend).await.unwrap(), JobStatus::Pending);
}

#[tokio::test]
async fn an_enqueue_in_a_rolled_back_transaction_never_exists() {
    let backend = fresh_backend().await;
    let mut tx = backend.pool().begin().await.unwrap();
    let handle = Record::new(2)
        .enqueue(backend.on(&mut tx))
        .await
        .expect("enqueue");
    tx.rollback().await.unwrap();
    let err = handle.record(&backend).await.unwrap_err();
    assert!(
        matches!(err, Error::NotFound(id) if id == handle.id()),
        "{err:?}"
    );
    assert_eq!(rows_in(backend.pool(), backend.schema_name()).await, 0);
}

/// What a service that got its backend from `jobs::connect(url)` does: no downcasting.
#[tokio::test]
async fn a_connected_any_backend_enqueues_in_the_callers_transaction_into_its_schema() {
    let schema = new_schema();
    let connected = PgBackend::connect(&url_with(&format!("schema={schema}")))
        .await
        .expect("connect");
    let backend = AnyBackend::new(connected);
    let pg = backend.postgres().expect("a Postgres backend");

    let mut tx = pg.pool().begin().await.unwrap();
    let kept = Record::new(1).enqueue(backend.on(&mut tx)).await.unwrap();
    assert!(
        !stored_in(pg, &schema, kept.id()).await,
        "visible before the commit"
    );
    tx.commit().await.unwrap();
    assert!(stored_in(pg, &schema, kept.id()).await);
    assert_eq!(kept.status(&backend).await.unwrap(), JobStatus::Pending);

    let mut tx = pg.pool().begin().await.unwrap();
    let dropped = Record::new(2).enqueue(backend.on(&mut tx)).await.unwrap();
    tx.rollback().await.unwrap();
    assert!(!stored_in(pg, &schema, dropped.id()).await);
    assert_eq!(rows_in(pg.pool(), &schema).await, 1);
}

#[tokio::test]
async fn a_pool_enqueues_into_its_backends_schema() {
    let backend = fresh_backend().await;
    let pool = backend.pool().clone();
    let one = Record::new(1).enqueue(&pool).await.expect("enqueue");
    assert!(stored_in(&backend, backend.schema_name(), one.id()).await);
    assert_eq!(one.status(&pool).await.unwrap(), JobStatus::Pending);
    let many = Record::enqueue_many(&pool, (0..100).map(Record::new))
        .await
        .expect("enqueue many");
    assert_eq!(many.len(), 100);
    assert_eq!(rows_in(&pool, backend.schema_name()).await, 101);
}

#[tokio::test]
async fn a_pool_shared_by_backends_of_two_schemas_is_refused() {
    let pool = pool().await;
    let (a, b) = (new_schema(), new_schema());
    let first = PgBackend::from_pool(pool.clone()).schema(&a).unwrap();
    let second = PgBackend::from_pool(pool.clone()).schema(&b).unwrap();
    let err = Record::new(1).enqueue(&pool).await.unwrap_err();
    assert!(matches!(err, Error::Invalid(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(&a) && text.contains(&b), "{text}");
    // A bare connection of this process (which has backends of both schemas) is refused too.
    let mut conn = pool.acquire().await.unwrap();
    let err = Record::new(2).enqueue(&mut *conn).await.unwrap_err();
    assert!(matches!(err, Error::Invalid(_)), "{err:?}");
    drop((first, second));
}

#[tokio::test]
async fn a_backend_that_is_not_postgres_refuses_a_transaction_enqueue() {
    let memory = AnyBackend::new(MemoryBackend::new());
    let err = memory.postgres().unwrap_err();
    assert!(matches!(err, Error::Invalid(_)), "{err:?}");
    assert!(err.to_string().contains("not PostgreSQL"), "{err}");
    let pool = pool().await;
    let mut conn = pool.acquire().await.unwrap();
    let err = Record::new(1)
        .enqueue(memory.on(&mut conn))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Invalid(_)), "{err:?}");
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
    assert_eq!(rows_in(backend.pool(), backend.schema_name()).await, 1);
}

#[tokio::test]
async fn tags_are_stored_with_each_job_of_every_statement() {
    let backend = fresh_backend().await;
    let one = Record::new(1)
        .tag("order:42")
        .tag("customer:7")
        .enqueue(&backend)
        .await
        .unwrap();
    assert_eq!(
        one.record(&backend).await.unwrap().tags,
        ["order:42", "customer:7"]
    );
    let tag_sets: [&[&str]; 5] = [&[], &["a"], &["b", "c", "d"], &[], &["e"]];
    for unique in [false, true] {
        let jobs: Vec<_> = tag_sets
            .iter()
            .enumerate()
            .map(|(i, tags)| {
                let mut job = new_job("tagged", "tags");
                job.tags = tags.iter().map(|t| t.to_string()).collect();
                job.unique_key = unique.then(|| format!("key-{i}"));
                job
            })
            .collect();
        for (id, tags) in put(&backend, jobs, t0()).await.into_iter().zip(tag_sets) {
            let record = backend.read(ReadParams { id }).await.unwrap().unwrap();
            assert_eq!(record.tags, tags, "unique keys: {unique}");
        }
    }
}
