//! A poison job: a row whose record does not decode (here a `backoff` of an unknown shape,
//! written with plain SQL) is failed dead with a decode error by the fetch that leases it, and
//! takes none of the healthy jobs of its batch down with it.

use std::time::Duration;

use jobs_core::{Backend, ErrorKind, FetchParams, JobExt, JobId, JobStatus, ReadParams, Worker};
use jobs_postgres::PgBackend;

use crate::support::{fresh_backend, new_job, put, t0, Record};

/// Gives job `id` a `backoff` no version of the crate wrote.
async fn poison(b: &PgBackend, id: JobId) {
    let statement = format!(
        r#"UPDATE "{}".jobs SET backoff = '{{"nope":1}}'::jsonb WHERE id = $1"#,
        b.schema_name()
    );
    let updated = sqlx::query(&statement)
        .bind(id.0)
        .execute(b.pool())
        .await
        .expect("the row is updated");
    assert_eq!(updated.rows_affected(), 1);
}

/// Asserts that job `id` is dead with one error of kind decode saying it is corrupt, read
/// with plain SQL (its record does not decode).
async fn assert_poisoned(b: &PgBackend, id: JobId) {
    let statement = format!(
        "SELECT status::text, jsonb_array_length(errors)::int4, errors->0->>'kind', \
         errors->0->>'message' FROM \"{}\".jobs WHERE id = $1",
        b.schema_name()
    );
    let (status, errors, kind, message): (String, i32, String, String) = sqlx::query_as(&statement)
        .bind(id.0)
        .fetch_one(b.pool())
        .await
        .expect("the row is there");
    assert_eq!((status.as_str(), errors), ("dead", 1));
    assert_eq!(kind, ErrorKind::Decode.as_str());
    assert!(
        message.starts_with(&format!("stored job {} is corrupt: ", id.0)),
        "{message}"
    );
    let err = b.read(ReadParams { id }).await.unwrap_err();
    assert!(err.to_string().contains("is corrupt"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_job_dies_alone() {
    let b = fresh_backend().await;
    let jobs = (0..6).map(|_| new_job("poison", "poison")).collect();
    let ids = put(&b, jobs, t0()).await;
    let bad = ids[2];
    poison(&b, bad).await;

    let leased = b
        .fetch(FetchParams {
            queues: vec!["poison".into()],
            limit: 10,
            worker: "w".into(),
            lease_for: Duration::from_secs(30),
            now: t0(),
        })
        .await
        .expect("a poison job does not fail the fetch");
    let mut fetched: Vec<JobId> = leased.iter().map(|j| j.record.id).collect();
    fetched.sort();
    let mut healthy: Vec<JobId> = ids.iter().copied().filter(|&id| id != bad).collect();
    healthy.sort();
    assert_eq!(fetched, healthy, "every healthy job of the batch is leased");
    assert!(leased
        .iter()
        .all(|j| j.record.status == JobStatus::Running && j.record.attempt == 1));
    assert_poisoned(&b, bad).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_runs_the_healthy_jobs_beside_a_poison_one() {
    let b = fresh_backend().await;
    let bad = Record::new(0).enqueue(&b).await.unwrap().id();
    poison(&b, bad).await;
    let mut healthy = Vec::new();
    for n in 1..=5 {
        healthy.push(Record::new(n).enqueue(&b).await.unwrap().id());
    }

    let worker = Worker::new(b.clone()).register::<Record>().cron(false);
    let drained = tokio::time::timeout(Duration::from_secs(20), worker.drain())
        .await
        .expect("the worker drains the queue")
        .unwrap();
    assert_eq!(drained.completed, 5);
    for id in healthy {
        let record = b.read(ReadParams { id }).await.unwrap().expect("stored");
        assert_eq!(record.status, JobStatus::Completed);
    }
    assert_poisoned(&b, bad).await;
}
