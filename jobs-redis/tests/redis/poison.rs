//! A poison job: a job whose stored payload is not JSON, written under the documented layout,
//! is failed dead with a decode error by the fetch that leases it, stays readable and listable,
//! and takes none of the healthy jobs of its batch down with it.

use std::time::Duration;

use jobs_core::{
    Backend, EnqueueParams, ErrorKind, FetchParams, Job, JobContext, JobError, JobExt, JobFilter,
    JobId, JobOptions, JobRecord, JobStatus, Operations, PageRequest, ReadParams, StateMap, Worker,
};
use jobs_redis::{redis, RedisBackend};
use serde::{Deserialize, Serialize};

use crate::support::{job, raw_connection, single_backend, t0};

/// What the poisoned payload key holds.
const NOT_JSON: &str = "not json {";

/// Overwrites the payload key `{prefix:queue}:p:<id>` of job `id` with [`NOT_JSON`].
async fn poison(b: &RedisBackend, queue: &str, id: JobId) {
    let mut conn = raw_connection().await;
    let key = format!("{{{}:{queue}}}:p:{}", b.key_prefix(), id.0.simple());
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_job_dies_alone_and_stays_visible() {
    let b = single_backend().await;
    let jobs: Vec<_> = (0..6).map(|_| job("poison", t0())).collect();
    let ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
    b.enqueue(EnqueueParams { jobs, now: t0() }).await.unwrap();
    let bad = ids[2];
    poison(&b, "poison", bad).await;

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
    assert!(leased.iter().all(|j| j.record.payload.get() == "{}"));

    let read = b.read(ReadParams { id: bad }).await.unwrap();
    assert_poisoned(&read.expect("the poison job is readable"));
    let page = b
        .jobs(&JobFilter::new().queue("poison"), PageRequest::default())
        .await
        .expect("the queue lists");
    assert_eq!(page.jobs.len(), 6);
    let listed = page.jobs.iter().find(|r| r.id == bad).expect("listed");
    assert_poisoned(listed);
    assert!(page
        .jobs
        .iter()
        .filter(|r| r.id != bad)
        .all(|r| r.status == JobStatus::Running));
}

#[derive(Serialize, Deserialize)]
struct Echo {
    n: u64,
}

impl Job for Echo {
    const NAME: &'static str = "redis-test.echo";
    type Output = u64;
    fn options() -> JobOptions {
        JobOptions {
            queue: "poisoned".into(),
            ..Default::default()
        }
    }
    async fn run(self, _ctx: JobContext, _state: StateMap) -> Result<u64, JobError> {
        Ok(self.n)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_runs_the_healthy_jobs_beside_a_poison_one() {
    let b = single_backend().await;
    let bad = Echo { n: 0 }.enqueue(&b).await.unwrap().id();
    poison(&b, "poisoned", bad).await;
    let mut healthy = Vec::new();
    for n in 1..=5 {
        healthy.push(Echo { n }.enqueue(&b).await.unwrap().id());
    }

    let worker = Worker::new(b.clone()).register::<Echo>().cron(false);
    let drained = tokio::time::timeout(Duration::from_secs(20), worker.drain())
        .await
        .expect("the worker drains the queue")
        .unwrap();
    assert_eq!(drained.completed, 5);
    for id in healthy {
        assert_eq!(b.job(id).await.unwrap().status, JobStatus::Completed);
    }
    assert_poisoned(&b.job(bad).await.unwrap());
}
