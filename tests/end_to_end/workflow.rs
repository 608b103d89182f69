//! Workflows of `#[job]` fns on every backend: a chain whose typed results flow from step to
//! step, a group whose results reach the step after it, and, on PostgreSQL, a workflow stored
//! in the caller's transaction or not at all.

use std::time::Duration;

use jobs::prelude::*;
use jobs::{JobStatus, Operations, Worker, Workflow, WorkflowState};
use serde::{Deserialize, Serialize};

use super::backends;

/// What `quote` answers: the order and its total in cents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
struct Priced {
    order: u64,
    cents: u64,
}

#[job(queue = "e2e-flow", name = "e2e.flow.quote")]
async fn quote(order: u64) -> Result<Priced, JobError> {
    Ok(Priced {
        order,
        cents: order * 100,
    })
}

#[job(queue = "e2e-flow", name = "e2e.flow.charge")]
async fn charge(quote: Priced) -> Result<String, JobError> {
    Ok(format!("charged {} for order {}", quote.cents, quote.order))
}

#[job(queue = "e2e-flow-side", name = "e2e.flow.notify")]
async fn notify(receipt: String) -> Result<usize, JobError> {
    Ok(receipt.len())
}

#[job(queue = "e2e-flow-side", name = "e2e.flow.archive")]
async fn archive(receipt: String) -> Result<String, JobError> {
    Ok(format!("archived: {receipt}"))
}

#[job(queue = "e2e-flow", name = "e2e.flow.close")]
async fn close(length: usize, archived: String) -> Result<String, JobError> {
    Ok(format!("{length} {archived}"))
}

fn order_flow(order: u64) -> Workflow<String> {
    Workflow::start(Quote::new(order))
        .then::<Charge>()
        .then_all::<(Notify, Archive)>()
        .then::<Close>()
}

fn worker(backend: &jobs::AnyBackend) -> Worker {
    Worker::new(backend.clone())
        .queues(["e2e-flow", "e2e-flow-side"])
        .poll_interval(Duration::from_millis(10))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflows_run_on_every_backend() {
    for backend in backends().await {
        let handle = order_flow(3).enqueue(&backend).await.unwrap();
        let before = backend.workflow(handle.id()).await.unwrap();
        let statuses: Vec<JobStatus> = before.steps.iter().map(|s| s.job.status).collect();
        assert_eq!(
            statuses,
            [
                JobStatus::Pending,
                JobStatus::Waiting,
                JobStatus::Waiting,
                JobStatus::Waiting,
                JobStatus::Waiting
            ]
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(worker(&backend).run_until(async {
            let _ = stopped.await;
        }));
        let receipt = "charged 300 for order 3";
        assert_eq!(
            handle.wait(&backend).await.unwrap(),
            format!("{} archived: {receipt}", receipt.len())
        );
        let _ = stop.send(());
        running.await.unwrap().unwrap();
        let after = backend.workflow(handle.id()).await.unwrap();
        assert_eq!(after.state, WorkflowState::Completed);
        assert!(after
            .steps
            .iter()
            .all(|s| s.job.status == JobStatus::Completed && s.job.attempt == 1));
        let queues: Vec<&str> = after.steps.iter().map(|s| &*s.job.queue).collect();
        assert_eq!(
            queues,
            [
                "e2e-flow",
                "e2e-flow",
                "e2e-flow-side",
                "e2e-flow-side",
                "e2e-flow"
            ]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_is_cancelled_whole_on_every_backend() {
    for backend in backends().await {
        let handle = order_flow(4).enqueue(&backend).await.unwrap();
        assert_eq!(backend.cancel_workflow(handle.id()).await.unwrap(), 5);
        let status = backend.workflow(handle.id()).await.unwrap();
        assert_eq!(status.state, WorkflowState::Cancelled);
        assert!(status
            .steps
            .iter()
            .all(|s| s.job.status == JobStatus::Cancelled));
        let ended = handle.wait(&backend).await.unwrap_err();
        assert!(
            matches!(
                ended,
                jobs::Error::JobEnded {
                    status: JobStatus::Cancelled,
                    ..
                }
            ),
            "{ended:?}"
        );
    }
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_is_stored_with_the_callers_transaction_or_not_at_all() {
    use jobs::postgres::PostgresExt as _;
    let backend = backends().await.remove(1);
    let pool = backend.postgres().unwrap().pool().clone();
    let mut tx = pool.begin().await.unwrap();
    let dropped = order_flow(5).enqueue(backend.on(&mut tx)).await.unwrap();
    tx.rollback().await.unwrap();
    assert!(matches!(
        backend.workflow(dropped.id()).await,
        Err(jobs::Error::WorkflowNotFound(id)) if id == dropped.id()
    ));
    let mut tx = pool.begin().await.unwrap();
    let kept = order_flow(6).enqueue(backend.on(&mut tx)).await.unwrap();
    assert!(
        backend.workflow(kept.id()).await.is_err(),
        "not visible before the commit"
    );
    tx.commit().await.unwrap();
    assert_eq!(backend.workflow(kept.id()).await.unwrap().steps.len(), 5);
}
