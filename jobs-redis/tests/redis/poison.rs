//! A poison job: a job whose stored payload is not JSON, written under the documented layout,
//! is failed dead with a decode error by the fetch that leases it, stays readable and listable,
//! and takes none of the healthy jobs of its batch down with it (the checks are the suite's
//! `testing::poison`, with this backend's corruption).

use jobs_core::testing::poison;
use jobs_core::{ErrorKind, JobFilter, JobId, JobRecord, JobStatus, Operations, PageRequest};
use jobs_redis::{redis, RedisBackend};

use crate::support::{raw_connection, single_backend};

/// A poisoned payload short enough for the job's hash.
const NOT_JSON: &str = "not json {";

/// A poisoned payload too long for the hash (over 64 bytes): it lives in the payload key.
const LONG_NOT_JSON: &str =
    "not json { this text runs past the sixty-four bytes that a job's hash keeps inline";

/// Makes job `id`'s payload `text`, where the layout keeps it: in the hash's field `p` for a
/// text of at most 64 bytes, else in the payload key `{prefix:queue}:p:<id>` (the field
/// removed). The job stored by the suite has a short payload, in its hash.
async fn corrupt_payload(b: &RedisBackend, id: JobId, text: &str) {
    let mut conn = raw_connection().await;
    let base = format!("{{{}:conformance}}:", b.key_prefix());
    let job = format!("{base}j:{}", id.0.simple());
    let held: bool = redis::cmd("HEXISTS")
        .arg(&job)
        .arg("p")
        .query_async(&mut conn)
        .await
        .expect("HEXISTS");
    assert!(held, "a short payload is kept in the job's hash");
    let mut pipe = redis::pipe();
    if text.len() <= 64 {
        pipe.hset(&job, "p", text);
    } else {
        pipe.hdel(&job, "p")
            .set(format!("{base}p:{}", id.0.simple()), text);
    }
    let _: () = pipe
        .query_async(&mut conn)
        .await
        .expect("the payload is overwritten");
}

/// The poisoned job as read back: dead, with one decode error saying it is corrupt, and its
/// payload shown as a JSON string of the stored `text`.
fn assert_poisoned(record: &JobRecord, text: &str) {
    assert_eq!(record.status, JobStatus::Dead);
    assert_eq!(
        record.payload.get(),
        serde_json::to_string(text).unwrap().as_str()
    );
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

/// The poison job as the backend reads and lists it, its payload `text`.
async fn assert_visible_and_poisoned(b: &RedisBackend, bad: JobId, text: &str) {
    assert_poisoned(&b.job(bad).await.expect("the poison job is readable"), text);
    let page = b
        .jobs(
            &JobFilter::new().status(JobStatus::Dead),
            PageRequest::default(),
        )
        .await
        .expect("its queue lists");
    let listed = page.jobs.iter().find(|r| r.id == bad).expect("listed");
    assert_poisoned(listed, text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_job_dies_alone_and_stays_visible() {
    for text in [NOT_JSON, LONG_NOT_JSON] {
        let b = single_backend().await;
        let bad = poison::fetch_leaves_a_poison_job_out(&b, async |b: &RedisBackend, id| {
            corrupt_payload(b, id, text).await
        })
        .await;
        assert_visible_and_poisoned(&b, bad, text).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_runs_the_healthy_jobs_beside_a_poison_one() {
    for text in [NOT_JSON, LONG_NOT_JSON] {
        let b = single_backend().await;
        let bad = poison::a_worker_runs_beside_a_poison_job(&b, async |b: &RedisBackend, id| {
            corrupt_payload(b, id, text).await
        })
        .await;
        assert_visible_and_poisoned(&b, bad, text).await;
    }
}
