//! Workflows run by a worker: typed results flow from step to step, a group's results reach
//! the step after it, and a step that ends dead runs the compensations and ends the workflow.

use crate::testing::jobs::orders::*;
use crate::testing::support::*;
use crate::*;

/// The orders workflow for `order`.
fn order(order: u64) -> Workflow<String> {
    Workflow::start(Reserve { order })
        .compensate::<Unreserve>()
        .then::<Pay>()
        .then_all::<(Email, Pdf)>()
        .then::<Finish>()
}

fn worker_of_orders(b: &AnyBackend) -> Worker {
    worker(b)
        .register::<Reserve>()
        .register::<Pay>()
        .register::<Email>()
        .register::<Pdf>()
        .register::<Finish>()
        .register::<Unreserve>()
}

fn statuses(status: &WorkflowStatus) -> Vec<(&str, JobStatus)> {
    status
        .steps
        .iter()
        .map(|s| (s.job.name.rsplit('.').next().unwrap_or(""), s.job.status))
        .collect()
}

/// Every step runs once, at attempt 1, each with the result before it; the workflow's result
/// is its last step's; the unneeded compensation is cancelled.
pub async fn worker_runs_a_workflow_to_its_end(b: AnyBackend) {
    let running = Running::start(worker_of_orders(&b));
    let handles = [
        order(42).enqueue(&b).await.unwrap(),
        order(7).enqueue(&b).await.unwrap(),
    ];
    assert_eq!(
        handles[0].wait(&b).await.unwrap(),
        "done receipt-420.pdf sent=true"
    );
    assert_eq!(
        handles[1].wait(&b).await.unwrap(),
        "done receipt-70.pdf sent=true"
    );
    running.stop().await.unwrap();
    let status = handles[0].status(&b).await.unwrap().expect("stored");
    assert_eq!(status.state, WorkflowState::Completed);
    assert_eq!(
        statuses(&status),
        [
            ("reserve", JobStatus::Completed),
            ("pay", JobStatus::Completed),
            ("email", JobStatus::Completed),
            ("pdf", JobStatus::Completed),
            ("finish", JobStatus::Completed),
            ("unreserve", JobStatus::Cancelled),
        ]
    );
    let work = &status.steps[..5];
    assert!(
        work.iter().all(|s| s.job.attempt == 1),
        "each step ran once"
    );
    assert_eq!(status.steps[1].job.progress, 60);
    let results: Vec<String> = work
        .iter()
        .map(|s| s.job.result.as_ref().expect("a result").get().to_string())
        .collect();
    assert_eq!(
        results,
        [
            "420",
            r#""receipt-420""#,
            "true",
            r#""receipt-420.pdf""#,
            r#""done receipt-420.pdf sent=true""#
        ]
    );
}

/// A declined payment ends dead at once; the reservation's compensation runs with the
/// reservation, the later steps are cancelled, and waiting on the workflow tells which step
/// ended it.
pub async fn worker_compensates_a_workflow_whose_step_dies(b: AnyBackend) {
    let running = Running::start(worker_of_orders(&b));
    let handle = order(DECLINED).enqueue(&b).await.unwrap();
    let ended = handle.wait(&b).await.unwrap_err();
    running.stop().await.unwrap();
    let Error::JobEnded {
        status, last_error, ..
    } = &ended
    else {
        panic!("expected the declined step's end, got {ended:?}");
    };
    assert_eq!(*status, JobStatus::Dead);
    assert_eq!(last_error.as_deref(), Some("card declined"));
    let status = handle.status(&b).await.unwrap().expect("stored");
    assert_eq!(status.state, WorkflowState::Failed);
    assert_eq!(
        statuses(&status),
        [
            ("reserve", JobStatus::Completed),
            ("pay", JobStatus::Dead),
            ("email", JobStatus::Cancelled),
            ("pdf", JobStatus::Cancelled),
            ("finish", JobStatus::Cancelled),
            ("unreserve", JobStatus::Completed),
        ]
    );
    let release = &status.steps[5].job;
    assert_eq!(release.result.as_ref().map(|r| r.get()), Some("990"));
    assert_eq!(
        status.steps[1].job.attempt, 1,
        "a fatal error is not retried"
    );
}
