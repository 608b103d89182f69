//! A poison job: a job whose stored payload is not JSON, written under the documented layout,
//! is failed dead with a decode error by the fetch that leases it, stays readable and listable,
//! and takes none of the healthy jobs of its batch down with it (the checks are the suite's
//! `testing::poison`, with this backend's corruption).

use jobs_core::testing::poison;
use jobs_core::{ErrorKind, JobFilter, JobId, JobRecord, JobStatus, Operations, PageRequest};
use jobs_redis::{redis, RedisBackend};

use crate::support::{raw_connection, single_backend};

/// What the poisoned payload key holds.
const NOT_JSON: &str = "not json {";

/// Overwrites the payload key `{prefix:queue}:p:<id>` of job `id` (of the suite's queue) with
/// [`NOT_JSON`].
async fn corrupt_payload(b: &RedisBackend, id: JobId) {
    let mut conn = raw_connection().await;
    let key = format!("{{{}:conformance}}:p:{}", b.key_prefix(), id.0.simple());
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg(NOT_JSON)
        .arg("XX")
        .query_async(&mut conn)
        .await
        .expect("the payload key exists");
}

/// The poisoned job as read back: dead, with one decode error saying it is corrupt, and its
/// payload shown as a JSON string of the stored text.
fn assert_poisoned(record: &JobRecord) {
    assert_eq!(record.status, JobStatus::Dead);
    assert_eq!(record.payload.get(), r#""not json {""#);
    let [error] = &record.errors[..] else {
        panic!("one error expected: {:?}", record.errors);
    };
    assert_eq!((error.kind, error.attempt), (ErrorKind::Decode, 1));
    assert!(
        error
            .message
            .starts_with(&format!("stored job {} is corrupt: ", record.id.0.simple())),
        "{}",
        error.message
    );
}

/// The poison job as the backend reads and lists it.
async fn assert_visible_and_poisoned(b: &RedisBackend, bad: JobId) {
    assert_poisoned(&b.job(bad).await.expect("the poison job is readable"));
    let page = b
        .jobs(
            &JobFilter::new().status(JobStatus::Dead),
            PageRequest::default(),
        )
        .await
        .expect("its queue lists");
    let listed = page.jobs.iter().find(|r| r.id == bad).expect("listed");
    assert_poisoned(listed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_job_dies_alone_and_stays_visible() {
    let b = single_backend().await;
    let bad = poison::fetch_leaves_a_poison_job_out(&b, async |b: &RedisBackend, id| {
        corrupt_payload(b, id).await
    })
    .await;
    assert_visible_and_poisoned(&b, bad).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_runs_the_healthy_jobs_beside_a_poison_one() {
    let b = single_backend().await;
    let bad = poison::a_worker_runs_beside_a_poison_job(&b, async |b: &RedisBackend, id| {
        corrupt_payload(b, id).await
    })
    .await;
    assert_visible_and_poisoned(&b, bad).await;
}
