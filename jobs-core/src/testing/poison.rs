//! Checks with a poison job: a stored job that does not decode, which each backend writes its
//! own way (Redis a payload that is not JSON, PostgreSQL a column of an unknown shape), so these
//! checks take the corruption as a parameter instead of running from `conformance!`:
//!
//! ```ignore
//! #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn a_poison_job_dies_alone() {
//!     let b = fresh_backend().await;
//!     let bad = jobs_core::testing::poison::fetch_leaves_a_poison_job_out(&b, corrupt).await;
//!     assert_poisoned(&b, bad).await; // read back as the backend can
//! }
//! ```
//!
//! Each returns the poison job's id, for the backend's own assertions on how it reads back.

use std::time::Duration;

use crate::backend::{Backend, FetchParams};
use crate::clock::{Clock, SystemClock};
use crate::enqueue::JobExt;
use crate::model::{JobId, JobStatus};
use crate::operations::Operations;
use crate::worker::Worker;

use super::jobs::Echo;
use super::support::QUEUE;

/// Enqueues a poison job between healthy ones: returns its id and theirs.
async fn poison_among_healthy<B, C>(b: &B, corrupt: C) -> (JobId, Vec<JobId>)
where
    B: Backend + Clone,
    C: AsyncFnOnce(&B, JobId),
{
    let mut healthy = Vec::new();
    for n in 1..=2 {
        healthy.push(Echo { n }.enqueue(b).await.expect("enqueue").id());
    }
    let bad = Echo { n: 0 }.enqueue(b).await.expect("enqueue").id();
    corrupt(b, bad).await;
    for n in 3..=5 {
        healthy.push(Echo { n }.enqueue(b).await.expect("enqueue").id());
    }
    (bad, healthy)
}

/// One fetch batch holding a poison job: every healthy job of it is leased at attempt 1, and
/// the poison job is not handed out.
pub async fn fetch_leaves_a_poison_job_out<B, C>(b: &B, corrupt: C) -> JobId
where
    B: Backend + Clone,
    C: AsyncFnOnce(&B, JobId),
{
    let (bad, mut healthy) = poison_among_healthy(b, corrupt).await;
    let leased = b
        .fetch(FetchParams {
            ended: Vec::new(),
            known: None,
            queues: vec![QUEUE.into()],
            limit: 10,
            worker: "w".into(),
            lease_for: Duration::from_secs(60),
            now: SystemClock.now(),
            flow: Vec::new(),
            reserve: 0,
            deliver: 0,
        })
        .await
        .expect("a poison job does not fail the fetch");
    let mut fetched: Vec<JobId> = leased.iter().map(|j| j.record.id).collect();
    fetched.sort_unstable();
    healthy.sort_unstable();
    assert_eq!(fetched, healthy, "every healthy job of the batch is leased");
    assert!(leased
        .iter()
        .all(|j| j.record.status == JobStatus::Running && j.record.attempt == 1));
    bad
}

/// A worker over a queue holding a poison job runs every healthy job to completion.
pub async fn a_worker_runs_beside_a_poison_job<B, C>(b: &B, corrupt: C) -> JobId
where
    B: Backend + Clone,
    C: AsyncFnOnce(&B, JobId),
{
    let (bad, healthy) = poison_among_healthy(b, corrupt).await;
    let worker = Worker::new(b.clone())
        .queues([QUEUE])
        .register::<Echo>()
        .cron(false);
    let drained = tokio::time::timeout(Duration::from_secs(20), worker.drain())
        .await
        .expect("the worker drains the queue")
        .expect("the worker runs");
    assert_eq!(drained.completed, healthy.len() as u64);
    for id in healthy {
        let job = b.job(id).await.expect("a healthy job reads back");
        assert_eq!(job.status, JobStatus::Completed);
    }
    bad
}
