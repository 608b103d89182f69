//! A poison job: a row whose record does not decode (here a `backoff` of an unknown shape,
//! written with plain SQL) is failed dead with a decode error by the fetch that leases it, and
//! takes none of the healthy jobs of its batch down with it (the checks are the suite's
//! `testing::poison`, with this backend's corruption).

use jobs_core::testing::poison;
use jobs_core::{Backend, ErrorKind, JobId, ReadParams};
use jobs_postgres::PgBackend;

use crate::support::fresh_backend;

/// Gives job `id` a `backoff` no version of the crate wrote.
async fn corrupt_backoff(b: &PgBackend, id: JobId) {
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
    let bad = poison::fetch_leaves_a_poison_job_out(&b, async |b: &PgBackend, id| {
        corrupt_backoff(b, id).await
    })
    .await;
    assert_poisoned(&b, bad).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_runs_the_healthy_jobs_beside_a_poison_one() {
    let b = fresh_backend().await;
    let bad = poison::a_worker_runs_beside_a_poison_job(&b, async |b: &PgBackend, id| {
        corrupt_backoff(b, id).await
    })
    .await;
    assert_poisoned(&b, bad).await;
}
