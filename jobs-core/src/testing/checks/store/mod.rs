//! Checks of the `Backend` operations themselves (and of [`Operations`](crate::Operations) on
//! top of them), with explicit times, and the helpers they share.

pub(super) mod bulk;
pub(super) mod enqueue;
pub(super) mod fail;
pub(super) mod fetch;
pub(super) mod flow;
pub(super) mod lease;
pub(super) mod list;
pub(super) mod liveness;
pub(super) mod manage;
pub(super) mod pause;
pub(super) mod presence;
pub(super) mod prune;
pub(super) mod tags;
pub(super) mod versions;
pub(super) mod workflow;

use std::time::Duration;

use crate::testing::support::*;
use crate::*;

/// Fetch `limit` jobs of `queues` at `now` as the worker `"checker"`, with a 5 s lease.
fn fetch_params(queues: &[&str], limit: usize, now: Timestamp) -> FetchParams {
    FetchParams {
        ended: Vec::new(),
        known: None,
        queues: queues.iter().map(|q| q.to_string()).collect(),
        limit,
        worker: "checker".to_string(),
        lease_for: Duration::from_secs(5),
        now,
        flow: Vec::new(),
        reserve: 0,
        deliver: 0,
    }
}

/// Leases up to `limit` ready jobs of `QUEUE`.
async fn fetch(b: &AnyBackend, limit: usize, now: Timestamp) -> Vec<LeasedJob> {
    b.fetch(fetch_params(&[QUEUE], limit, now))
        .await
        .expect("fetch")
}

/// Leases the one ready job of `QUEUE` that must be there.
async fn fetch_one(b: &AnyBackend, now: Timestamp) -> LeasedJob {
    let mut got = fetch(b, 1, now).await;
    assert_eq!(got.len(), 1, "expected one ready job at {now}");
    got.remove(0)
}

/// Completes a leased job with `result`; whether the write was accepted.
async fn complete(b: &AnyBackend, job: &LeasedJob, result: &str, now: Timestamp) -> bool {
    let params = CompleteParams {
        items: vec![Completion {
            lease: job.lease(),
            result: json(result),
        }],
        now,
    };
    b.complete(params).await.expect("complete")[0]
}

/// Fails a leased job with `error`; whether the write was accepted.
async fn fail_with(
    b: &AnyBackend,
    job: &LeasedJob,
    error: ErrorReport,
    retry_at: Option<Timestamp>,
    now: Timestamp,
) -> bool {
    let params = FailParams {
        items: vec![Failure {
            lease: job.lease(),
            error,
            retry_at,
        }],
        now,
    };
    b.fail(params).await.expect("fail")[0]
}

/// Fails a leased job with a retryable error saying `message`.
async fn fail(
    b: &AnyBackend,
    job: &LeasedJob,
    message: &str,
    retry_at: Option<Timestamp>,
    now: Timestamp,
) -> bool {
    let error = ErrorReport::new(ErrorKind::Retryable, message);
    fail_with(b, job, error, retry_at, now).await
}

/// Applies `action` to the jobs `ids` at `now`.
async fn manage_ids(b: &AnyBackend, action: Action, ids: &[JobId], now: Timestamp) -> Managed {
    b.manage(ManageParams {
        action,
        target: Target::Ids(ids.to_vec()),
        limit: ids.len(),
        now,
    })
    .await
    .expect("manage")
}

/// The ids of every job matching `filter`, in id order.
async fn listed(b: &AnyBackend, filter: JobFilter) -> Vec<JobId> {
    let params = ListParams {
        filter,
        after: None,
        limit: 10_000,
    };
    let jobs = b.list(params).await.expect("list");
    jobs.iter().map(|r| r.id).collect()
}

/// Stores `job` at `now` and takes it to `status`, by the operations a job goes through:
/// a future `run_at` (scheduled), a fetch (running), then a completion, a last failure (dead)
/// or a cancel. A job to fetch gets the lowest priority number, so it must be the only ready
/// job of its queue with that priority.
async fn job_in(b: &AnyBackend, mut job: NewJob, status: JobStatus, now: Timestamp) -> JobId {
    job.run_at = match status {
        JobStatus::Scheduled => now + chrono::Duration::days(1),
        _ => job.run_at.min(now),
    };
    let fetched = matches!(
        status,
        JobStatus::Running | JobStatus::Completed | JobStatus::Dead
    );
    if fetched {
        job.priority = i16::MIN;
    }
    if status == JobStatus::Waiting {
        job.step = Some(Box::new(crate::workflow::Step {
            workflow: crate::workflow::WorkflowId::new(),
            index: 1,
            role: crate::workflow::StepRole::Step { stage: 1 },
            group: false,
            slots: 1,
            input: None,
            on_complete: Vec::new(),
            on_dead: Vec::new(),
        }));
    }
    let queue = job.queue.clone();
    let id = put_at(b, job, now).await;
    let leased = match status {
        JobStatus::Waiting | JobStatus::Scheduled | JobStatus::Pending => return id,
        JobStatus::Cancelled => {
            assert_eq!(
                manage_ids(b, Action::Cancel, &[id], now).await.changed,
                [id]
            );
            return id;
        }
        JobStatus::Running | JobStatus::Completed | JobStatus::Dead => {
            let mut got = b
                .fetch(fetch_params(&[queue.as_str()], 1, now))
                .await
                .expect("fetch");
            assert_eq!(got.len(), 1, "the job to take to {status} is ready");
            got.remove(0)
        }
    };
    assert_eq!(
        leased.record.id, id,
        "the job to take to {status} comes first"
    );
    match status {
        JobStatus::Completed => assert!(complete(b, &leased, "null", now).await),
        JobStatus::Dead => assert!(fail(b, &leased, "last failure", None, now).await),
        _ => {}
    }
    id
}
