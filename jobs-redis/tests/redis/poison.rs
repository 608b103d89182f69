//! A poison job: a job whose stored payload is not JSON, written under the documented layout,
//! is failed dead with a decode error by the fetch that leases it, stays readable and listable,
//! and takes none of the healthy jobs of its batch down with it (the checks are the suite's
//! `testing::poison`, with this backend's corruption). A leased job whose stored meta is
//! corrupt dies in the rescue of its lapsed lease, which goes on with the other jobs; one whose
//! attempts are not a number dies in its fetch, its rescue or the fetch after its release.

use jobs_core::testing::poison;
use jobs_core::{
    Backend, CountsParams, EnqueueParams, ErrorKind, ErrorReport, JobFilter, JobId, JobRecord,
    JobStatus, Operations, PageRequest, ReadParams, Release, ReleaseParams, RescueParams,
    RescueTarget,
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

/// Overwrites field `field` of job `id`'s hash (queue `q`) with `text`.
async fn corrupt_field(b: &RedisBackend, id: JobId, field: &str, text: &str) {
    let mut conn = raw_connection().await;
    let key = format!("{{{}:q}}:j:{}", b.key_prefix(), id.0.simple());
    let _: () = redis::cmd("HSET")
        .arg(&key)
        .arg(field)
        .arg(text)
        .query_async(&mut conn)
        .await
        .expect("the field is overwritten");
}

/// Stores a healthy job and a bad one in queue `q`, each due at t0.
async fn healthy_and_bad(b: &RedisBackend) -> (JobId, JobId) {
    let (healthy, bad) = (job("q", t0()), job("q", t0()));
    let ids = (healthy.id, bad.id);
    b.enqueue(EnqueueParams {
        jobs: vec![healthy, bad],
        now: t0(),
    })
    .await
    .expect("enqueue");
    ids
}

/// Counts of queue `q`: running, pending and dead.
async fn running_pending_dead(b: &RedisBackend) -> (u64, u64, u64) {
    let counts = b
        .counts(CountsParams { queue: "q".into() })
        .await
        .expect("counts");
    (counts.running, counts.pending, counts.dead)
}

/// A leased job whose stored `m` (its name, most attempts and options) or attempts `a` is
/// corrupted before its lease lapses dies in the rescue, which cannot tell how many attempts
/// it has left; the healthy job leased with it is pending again, its lost attempt counted.
#[tokio::test]
async fn a_leased_job_whose_meta_or_attempts_are_corrupt_dies_in_its_rescue_and_spares_the_other() {
    for (field, text) in [("m", "not meta"), ("a", "many")] {
        let b = single_backend().await;
        let (healthy, bad) = healthy_and_bad(&b).await;
        assert_eq!(
            b.fetch(fetch(&["q"], 10, t0())).await.expect("fetch").len(),
            2
        );
        corrupt_field(&b, bad, field, text).await;

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
        let mut both = vec![healthy, bad];
        both.sort_unstable();
        assert_eq!(rescued, both, "{field}");
        assert_eq!(running_pending_dead(&b).await, (0, 1, 1), "{field}");
        let again = b.fetch(fetch(&["q"], 10, at(60_000))).await.expect("fetch");
        let ids: Vec<JobId> = again.iter().map(|j| j.record.id).collect();
        assert_eq!(ids, [healthy], "{field}");
        assert_eq!(again[0].record.attempt, 2, "its lost attempt counts");
        let e = b
            .read(ReadParams { id: bad })
            .await
            .expect_err("a job whose hash is corrupt reads as an error");
        assert!(e.to_string().contains(&format!("field `{field}`")), "{e}");
    }
}

/// A pending job whose attempts `a` is not a number dies in the fetch that reaches it, with an
/// error naming the field; the healthy job beside it is leased by the same fetch.
#[tokio::test]
async fn a_pending_job_whose_attempts_are_corrupt_dies_in_its_fetch_and_spares_the_other() {
    let b = single_backend().await;
    let (healthy, bad) = healthy_and_bad(&b).await;
    corrupt_field(&b, bad, "a", "many").await;

    let leased = b
        .fetch(fetch(&["q"], 10, t0()))
        .await
        .expect("the fetch runs");
    let ids: Vec<JobId> = leased.iter().map(|j| j.record.id).collect();
    assert_eq!(ids, [healthy]);
    assert_eq!(leased[0].record.attempt, 1);
    assert_eq!(running_pending_dead(&b).await, (1, 0, 1));
    let record = b
        .read(ReadParams { id: bad })
        .await
        .expect("the dead job reads")
        .expect("it is kept");
    assert_eq!(record.status, JobStatus::Dead);
    let [error] = &record.errors[..] else {
        panic!("one error expected: {:?}", record.errors);
    };
    assert_eq!(error.kind, ErrorKind::Decode);
    assert!(
        error.message.contains("field `a` is not a number"),
        "{}",
        error.message
    );
}

/// A leased job whose attempts `a` is corrupted while it runs, then handed back, is pending
/// with its `a` as it was, and the next fetch fails it dead; the healthy job handed back with
/// it runs again, its attempt not counted.
#[tokio::test]
async fn a_released_job_whose_attempts_are_corrupt_dies_in_the_next_fetch() {
    let b = single_backend().await;
    let (healthy, bad) = healthy_and_bad(&b).await;
    let leased = b.fetch(fetch(&["q"], 10, t0())).await.expect("fetch");
    assert_eq!(leased.len(), 2);
    corrupt_field(&b, bad, "a", "many").await;

    let items = leased
        .iter()
        .map(|j| Release {
            lease: j.lease(),
            run_at: None,
        })
        .collect();
    let accepted = b
        .release(ReleaseParams { items, now: at(1) })
        .await
        .expect("the release runs");
    assert_eq!(accepted, [true, true]);
    assert_eq!(running_pending_dead(&b).await, (0, 2, 0));
    let again = b.fetch(fetch(&["q"], 10, at(2))).await.expect("fetch");
    let ids: Vec<JobId> = again.iter().map(|j| j.record.id).collect();
    assert_eq!(ids, [healthy]);
    assert_eq!(
        again[0].record.attempt, 1,
        "a released attempt does not count"
    );
    assert_eq!(running_pending_dead(&b).await, (1, 0, 1));
}
