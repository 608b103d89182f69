//! The finished jobs kept for retention (`done`): a member per call that finished jobs, their
//! ids one after the other, scored by when. A job leaves its member when it is retried or
//! deleted, prune takes the oldest members whole or in part, and the count of jobs finished
//! since a time counts ids, not members.

use jobs_core::{
    Action, Backend, CountsParams, EnqueueParams, FinishedParams, JobId, JobStatus, LeasedJob,
    ManageParams, NewJob, PruneParams, ReadParams, Target, Timestamp,
};
use jobs_redis::{redis, RedisBackend};

use crate::support::{
    at, complete_all, fetch, job, members_with_scores, raw_connection, single_backend, t0,
};

/// `n` jobs of `queue` enqueued and leased at once, in the order the fetch gave them.
async fn leased(b: &RedisBackend, queue: &str, n: usize) -> Vec<LeasedJob> {
    let jobs: Vec<NewJob> = (0..n).map(|_| job(queue, t0())).collect();
    b.enqueue(EnqueueParams { jobs, now: t0() }).await.unwrap();
    let got = b.fetch(fetch(&[queue], n, at(1))).await.unwrap();
    assert_eq!(got.len(), n);
    got
}

/// The ids of `jobs`, as stored.
fn stored(jobs: &[LeasedJob]) -> Vec<String> {
    jobs.iter()
        .map(|j| j.record.id.0.simple().to_string())
        .collect()
}

/// The key of `queue`'s finished jobs.
fn done_key(b: &RedisBackend, queue: &str) -> String {
    format!("{{{}:{queue}}}:done", b.key_prefix())
}

/// `done`'s members of `queue`, oldest first: each one's time in microseconds and its ids.
async fn done(b: &RedisBackend, queue: &str) -> Vec<(i64, Vec<String>)> {
    let mut conn = raw_connection().await;
    let members: Vec<(String, i64)> = members_with_scores(&mut conn, &done_key(b, queue)).await;
    members
        .into_iter()
        .map(|(ids, time)| {
            let ids = ids.as_bytes().chunks(32);
            (
                time,
                ids.map(|id| String::from_utf8_lossy(id).into()).collect(),
            )
        })
        .collect()
}

fn micros(t: Timestamp) -> i64 {
    t.timestamp_micros()
}

async fn finished_since(b: &RedisBackend, queue: &str, since: Timestamp) -> u64 {
    b.finished_since(FinishedParams {
        queue: queue.into(),
        since,
    })
    .await
    .unwrap()
}

async fn manage(b: &RedisBackend, action: Action, ids: Vec<JobId>, now: Timestamp) -> Vec<JobId> {
    let p = ManageParams {
        action,
        target: Target::Ids(ids),
        limit: 100,
        now,
    };
    b.manage(p).await.unwrap().changed
}

fn prune(
    queue: &str,
    keep_count: Option<u64>,
    before: Option<Timestamp>,
    limit: usize,
) -> PruneParams {
    PruneParams {
        queue: queue.into(),
        keep_count,
        finished_before: before,
        limit,
        now: at(100_000),
    }
}

async fn exists(b: &RedisBackend, id: JobId) -> bool {
    b.read(ReadParams { id }).await.unwrap().is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_call_keeps_its_jobs_in_one_member() {
    let b = single_backend().await;
    let jobs = leased(&b, "f1", 300).await;
    complete_all(&b, &jobs[..200], at(10)).await;
    complete_all(&b, &jobs[200..], at(20)).await;
    assert_eq!(
        done(&b, "f1").await,
        [
            (micros(at(10)), stored(&jobs[..200])),
            (micros(at(20)), stored(&jobs[200..])),
        ]
    );
    assert_eq!(finished_since(&b, "f1", t0()).await, 300);
    assert_eq!(finished_since(&b, "f1", at(15)).await, 100);
    assert_eq!(finished_since(&b, "f1", at(21)).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_leaves_its_member_when_deleted_or_retried() {
    let b = single_backend().await;
    let jobs = leased(&b, "f2", 3).await;
    complete_all(&b, &jobs, at(10)).await;
    let id = |n: usize| jobs[n].record.id;
    assert_eq!(
        manage(&b, Action::Delete, vec![id(1)], at(11)).await,
        [id(1)]
    );
    let all = stored(&jobs);
    let kept = vec![all[0].clone(), all[2].clone()];
    assert_eq!(done(&b, "f2").await, [(micros(at(10)), kept)]);
    assert_eq!(finished_since(&b, "f2", t0()).await, 2);
    manage(&b, Action::Delete, vec![id(0), id(2)], at(12)).await;
    assert!(done(&b, "f2").await.is_empty());

    // Cancelled in one call: a member each, at the same time. A retry takes its job out.
    let waiting = [job("f2", t0()), job("f2", t0())];
    let ids: Vec<JobId> = waiting.iter().map(|j| j.id).collect();
    b.enqueue(EnqueueParams {
        jobs: waiting.to_vec(),
        now: t0(),
    })
    .await
    .unwrap();
    assert_eq!(manage(&b, Action::Cancel, ids.clone(), at(30)).await, ids);
    assert_eq!(done(&b, "f2").await.len(), 2);
    assert_eq!(
        manage(&b, Action::Retry, vec![ids[0]], at(31)).await,
        [ids[0]]
    );
    let left = vec![ids[1].0.simple().to_string()];
    assert_eq!(done(&b, "f2").await, [(micros(at(30)), left)]);
    let c = b.counts(CountsParams { queue: "f2".into() }).await.unwrap();
    assert_eq!((c.pending, c.cancelled, c.completed), (1, 1, 0));
    assert_eq!(finished_since(&b, "f2", t0()).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_takes_the_oldest_members_whole_or_in_part() {
    let b = single_backend().await;
    let jobs = leased(&b, "f3", 20).await;
    let (first, second) = jobs.split_at(10);
    complete_all(&b, first, at(10)).await;
    complete_all(&b, second, at(20)).await;

    assert_eq!(b.prune(prune("f3", Some(15), None, 3)).await.unwrap(), 3);
    assert_eq!(
        done(&b, "f3").await[0],
        (micros(at(10)), stored(&first[3..])),
        "the rest of a member goes back"
    );
    assert_eq!(b.prune(prune("f3", Some(15), None, 100)).await.unwrap(), 2);
    assert_eq!(
        done(&b, "f3").await[0],
        (micros(at(10)), stored(&first[5..]))
    );
    assert_eq!(
        b.prune(prune("f3", None, Some(at(15)), 100)).await.unwrap(),
        5
    );
    assert_eq!(done(&b, "f3").await, [(micros(at(20)), stored(second))]);
    for (n, job) in jobs.iter().enumerate() {
        assert_eq!(exists(&b, job.record.id).await, n >= 10, "job {n}");
    }
    let c = b.counts(CountsParams { queue: "f3".into() }).await.unwrap();
    assert_eq!(c.completed, 10);
}

/// A worker of the earlier layout, whose members hold one id each, retried a finished job
/// without taking it out of a batch's member: prune skips the job, which no longer finished then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_skips_a_job_that_did_not_finish_when_its_member_says() {
    let b = single_backend().await;
    let jobs = leased(&b, "f4", 1).await;
    complete_all(&b, &jobs, at(10)).await;
    let pending = job("f4", t0());
    b.enqueue(EnqueueParams {
        jobs: vec![pending.clone()],
        now: t0(),
    })
    .await
    .unwrap();
    let mut conn = raw_connection().await;
    let _: i64 = redis::cmd("ZADD")
        .arg(done_key(&b, "f4"))
        .arg(micros(at(5)))
        .arg(pending.id.0.simple().to_string())
        .query_async(&mut conn)
        .await
        .unwrap();

    assert_eq!(b.prune(prune("f4", Some(0), None, 100)).await.unwrap(), 1);
    assert!(done(&b, "f4").await.is_empty());
    let kept = b.read(ReadParams { id: pending.id }).await.unwrap();
    assert_eq!(kept.map(|r| r.status), Some(JobStatus::Pending));
    assert!(!exists(&b, jobs[0].record.id).await);
}

/// A thousand finished jobs cost `done` little more than their ids' 32 bytes each (an entry
/// per job took about 136).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn done_costs_about_the_bytes_of_its_ids() {
    let b = single_backend().await;
    let jobs = leased(&b, "f5", 1_000).await;
    complete_all(&b, &jobs[..500], at(10)).await;
    complete_all(&b, &jobs[500..], at(20)).await;
    let mut conn = raw_connection().await;
    let bytes: u64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(done_key(&b, "f5"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(
        bytes < 40 * 1_000,
        "done takes {bytes} bytes for 1,000 jobs"
    );
}
