//! A poison job: a job whose stored payload is not JSON, written under the documented layout,
//! is failed dead with a decode error by the fetch that leases it, stays readable and listable,
//! and takes none of the healthy jobs of its batch down with it (the checks are the suite's
//! `testing::poison`, with this backend's corruption). A leased job whose stored meta is
//! corrupt dies in the rescue of its lapsed lease, which goes on with the other jobs.

use jobs_core::testing::poison;
use jobs_core::{
    Backend, CountsParams, EnqueueParams, ErrorKind, ErrorReport, JobFilter, JobId, JobRecord,
    JobStatus, Operations, PageRequest, ReadParams, RescueParams, RescueTarget,
};
use jobs_redis::{redis, RedisBackend};

use crate::support::{at, fetch, job, raw_connection, single_backend, t0};

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

/// A leased job whose stored `m` (its name, most attempts and options) is corrupted before its
/// lease lapses dies in the rescue, which cannot tell how many attempts it has left; the
/// healthy job leased with it is pending again, its lost attempt counted.
#[tokio::test]
async fn a_leased_job_whose_meta_is_corrupt_dies_in_its_rescue_and_spares_the_other() {
    let b = single_backend().await;
    let (healthy, bad) = (job("q", t0()), job("q", t0()));
    let jobs = vec![healthy.clone(), bad.clone()];
    b.enqueue(EnqueueParams { jobs, now: t0() })
        .await
        .expect("enqueue");
    assert_eq!(
        b.fetch(fetch(&["q"], 10, t0())).await.expect("fetch").len(),
        2
    );
    let mut conn = raw_connection().await;
    let key = format!("{{{}:q}}:j:{}", b.key_prefix(), bad.id.0.simple());
    let _: () = redis::cmd("HSET")
        .arg(&key)
        .arg("m")
        .arg("not meta")
        .query_async(&mut conn)
        .await
        .expect("the meta is overwritten");

    let mut rescued = b
        .rescue(RescueParams {
            target: RescueTarget::Lapsed,
            now: at(60_000),
            limit: 100,
            error: ErrorReport::new(ErrorKind::LeaseLost, "lease expired"),
        })
        .await
        .expect("the rescue runs");
    rescued.sort_unstable();
    let mut both = vec![healthy.id, bad.id];
    both.sort_unstable();
    assert_eq!(rescued, both);
    let counts = b
        .counts(CountsParams { queue: "q".into() })
        .await
        .expect("counts");
    assert_eq!((counts.running, counts.pending, counts.dead), (0, 1, 1));
    let again = b.fetch(fetch(&["q"], 10, at(60_000))).await.expect("fetch");
    let ids: Vec<JobId> = again.iter().map(|j| j.record.id).collect();
    assert_eq!(ids, [healthy.id]);
    assert_eq!(again[0].record.attempt, 2, "its lost attempt counts");
    let e = b
        .read(ReadParams { id: bad.id })
        .await
        .expect_err("a job whose meta is corrupt reads as an error");
    assert!(e.to_string().contains("bad field `m`"), "{e}");
}
