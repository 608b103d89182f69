//! The test helpers an application uses in its own tests: what was enqueued, draining a
//! worker's queues inline, and one handler run.

use jobs::prelude::*;
use jobs::{MemoryBackend, Worker};

#[job(queue = "app_signup", name = "app.signup")]
async fn signup(user_id: i64) -> Result<(), JobError> {
    SendWelcome::new(user_id)
        .enqueue(&ctx_backend::get())
        .await?;
    Ok(())
}

#[job(queue = "app_signup", name = "app.send_welcome", tags = ["email"])]
async fn send_welcome(user_id: i64) -> Result<i64, JobError> {
    Ok(user_id)
}

#[job(
    queue = "app_flaky",
    name = "app.flaky",
    attempts = 2,
    backoff = "fixed(1h)"
)]
async fn flaky() -> Result<(), JobError> {
    Err(JobError::retryable("down"))
}

#[job(queue = "app_flaky", name = "app.doomed")]
async fn doomed() -> Result<(), JobError> {
    Err(JobError::fatal("never"))
}

/// The backend the signup handler enqueues its follow-up into, as an application would keep
/// it in its state.
mod ctx_backend {
    use std::sync::OnceLock;

    static BACKEND: OnceLock<jobs::MemoryBackend> = OnceLock::new();

    pub(super) fn get() -> jobs::MemoryBackend {
        BACKEND.get_or_init(jobs::MemoryBackend::new).clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueued_jobs_are_seen_typed_and_drained_inline() {
    let backend = ctx_backend::get();
    Signup::new(7).enqueue(&backend).await.unwrap();
    Signup::new(8).enqueue(&backend).await.unwrap();
    let waiting: Vec<i64> = backend
        .enqueued::<Signup>()
        .iter()
        .map(|j| j.user_id)
        .collect();
    assert_eq!(waiting, [7, 8]);
    assert!(backend.enqueued::<SendWelcome>().is_empty());

    let drained = Worker::new(backend.clone())
        .queues(["app_signup"])
        .drain()
        .await
        .unwrap();
    // Both signups and the two welcomes they enqueued ran, in one drain.
    assert_eq!(drained.completed, 4);
    assert_eq!((drained.retrying, drained.dead), (0, 0));
    assert!(backend.enqueued::<Signup>().is_empty());
    assert!(backend.enqueued::<SendWelcome>().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_counts_retries_and_dead_jobs_and_leaves_retries_waiting() {
    let backend = MemoryBackend::new();
    Flaky::new().enqueue(&backend).await.unwrap();
    Doomed::new().enqueue(&backend).await.unwrap();
    let drained = Worker::new(backend.clone())
        .queues(["app_flaky"])
        .drain()
        .await
        .unwrap();
    assert_eq!(
        (drained.completed, drained.retrying, drained.dead),
        (0, 1, 1)
    );
    // The flaky job waits an hour for its retry.
    assert_eq!(backend.enqueued::<Flaky>().len(), 1);
}

#[tokio::test]
async fn one_handler_runs_in_one_line() {
    assert_eq!(
        jobs::testing::perform(SendWelcome::new(5)).await.unwrap(),
        5
    );
    let err = jobs::testing::perform(Doomed::new()).await.unwrap_err();
    assert_eq!(
        (err.kind(), err.to_string()),
        (jobs::ErrorKind::Fatal, "never".to_string())
    );
}

/// The payload shapes of this test binary's jobs match their snapshots in `tests/payloads`.
#[test]
fn payload_shapes_match_their_snapshots() {
    jobs::testing::assert_payload_shapes(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/payloads"));
}
