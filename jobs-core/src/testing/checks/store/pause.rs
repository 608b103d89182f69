//! Queue state: paused queues, listed until resumed, and the recent throughput of a queue.

use super::*;

/// Pausing lists a queue as paused (once, however often it is paused) until it is resumed;
/// `queues()` names a paused queue even while it holds no jobs, and says which are paused.
pub async fn pause_marks_queues_until_resumed(b: AnyBackend) {
    let pause = |queue: &str, paused: bool| {
        b.pause(PauseParams {
            queue: queue.to_string(),
            paused,
        })
    };
    put(&b, new_job("held")).await;
    pause(OTHER_QUEUE, true).await.expect("pause");
    pause(QUEUE, true).await.expect("pause");
    pause(QUEUE, true).await.expect("pause again");
    let paused = || async { b.paused_queues(PausedParams {}).await.expect("paused") };
    assert_eq!(paused().await, [QUEUE, OTHER_QUEUE]);
    let summaries = b.queues().await.expect("queues");
    let listed: Vec<(&str, bool)> = summaries
        .iter()
        .map(|q| (q.name.as_str(), q.paused))
        .collect();
    assert_eq!(listed, [(QUEUE, true), (OTHER_QUEUE, true)]);

    pause(QUEUE, false).await.expect("resume");
    pause("never-paused", false)
        .await
        .expect("resume a running queue");
    assert_eq!(paused().await, [OTHER_QUEUE]);
    assert!(!b.queues().await.expect("queues")[0].paused);
}

/// A queue's throughput counts its jobs finished (completed or cancelled) at or after a time.
pub async fn finished_since_counts_recent_finishes(b: AnyBackend) {
    for (status, ms) in [
        (JobStatus::Completed, 1_000),
        (JobStatus::Completed, 2_000),
        (JobStatus::Cancelled, 2_500),
        (JobStatus::Completed, 3_000),
        (JobStatus::Dead, 3_000),
        (JobStatus::Pending, 3_000),
    ] {
        job_in(&b, new_job("finishing"), status, at(ms)).await;
    }
    let since = |queue: &str, ms: i64| {
        b.finished_since(FinishedParams {
            queue: queue.to_string(),
            since: at(ms),
        })
    };
    assert_eq!(since(QUEUE, 0).await.expect("count"), 4);
    assert_eq!(since(QUEUE, 2_000).await.expect("count"), 3);
    assert_eq!(since(QUEUE, 3_001).await.expect("count"), 0);
    assert_eq!(since(OTHER_QUEUE, 0).await.expect("count"), 0);
}
