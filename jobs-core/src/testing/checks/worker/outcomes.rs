//! How the worker records each way a handler can end: a result, a failure retried after the
//! backoff or at the handler's chosen time, a snooze, death, a panic, a payload that does not
//! decode, a timeout; and that a job of a name it does not run is left waiting.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{counter, seen};
use crate::testing::jobs::*;
use crate::testing::support::*;
use crate::*;

/// Lets the worker act on the time it was given, and gives it time to do what it should not.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// A worker runs jobs; the typed result and the progress are readable by id, and the completion
/// hook hears each job once, by its id, name, queue and attempt, after its handler ran.
pub async fn worker_runs_jobs_and_returns_typed_results(b: AnyBackend) {
    let heard = Arc::new(Mutex::new(Vec::new()));
    let hook = {
        let heard = heard.clone();
        move |e: &JobEvent| heard.lock().unwrap().push(e.clone())
    };
    let running = Running::start(worker(&b).register::<Echo>().on_completed(hook));
    let handles = Echo::enqueue_many(&b, (1..=20).map(|n| Echo { n }))
        .await
        .unwrap();
    for (n, handle) in (1..=20).zip(&handles) {
        assert_eq!(handle.wait(&b).await.unwrap(), n * 2);
    }
    let r = handles[0].record(&b).await.unwrap();
    assert_eq!(
        (r.status, r.progress, r.attempt),
        (JobStatus::Completed, 50, 1)
    );
    assert!(r.started_at.is_some() && r.finished_at >= r.started_at);
    assert!(r.errors.is_empty());
    running.stop().await.unwrap();
    let mut heard = heard.lock().unwrap().clone();
    heard.sort_by_key(|e| e.id);
    let ids: Vec<JobId> = handles.iter().map(|h| h.id()).collect();
    assert_eq!(heard.iter().map(|e| e.id).collect::<Vec<_>>(), ids);
    for e in &heard {
        assert_eq!(
            (&*e.name, &*e.queue, e.kind, e.attempt),
            (Echo::NAME, QUEUE, EventKind::Completed, 1)
        );
        assert!(
            e.at >= r.created_at,
            "heard at {} before the job existed",
            e.at
        );
    }
}

/// Retries wait for exactly the backoff (exponential from 1 s: 1 s, then 2 s), on a manual clock.
pub async fn worker_retries_follow_backoff(b: AnyBackend) {
    let clock = Arc::new(ManualClock::new(t0()));
    let running = Running::start(worker(&b).register::<Flaky>().clock(clock.clone()));
    let job = Enqueue::from(Flaky { failures: 2 }).run_at(t0());
    let id = job.enqueue(&b).await.unwrap().id();

    let first = wait_for(&b, id, "the first attempt failed", |r| {
        r.attempt == 1 && r.status == JobStatus::Pending
    })
    .await;
    assert_eq!(first.run_at, at(1_000));
    assert_eq!(
        (first.errors[0].kind, first.errors[0].message.as_str()),
        (ErrorKind::Retryable, "flaky failure 1")
    );
    settle().await;
    assert_eq!(
        record(&b, id).await.attempt,
        1,
        "no retry before the backoff elapsed"
    );

    clock.advance(Duration::from_secs(1));
    let second = wait_for(&b, id, "the second attempt failed", |r| {
        r.attempt == 2 && r.status == JobStatus::Pending
    })
    .await;
    assert_eq!(second.run_at, at(3_000));
    clock.advance(Duration::from_millis(1_999));
    settle().await;
    assert_eq!(record(&b, id).await.attempt, 2);
    clock.advance(Duration::from_millis(1));
    let done = wait_for(&b, id, "the job completed", |r| {
        r.status == JobStatus::Completed
    })
    .await;
    assert_eq!(done.attempt, 3);
    assert_eq!(
        serde_json::from_str::<u32>(done.result.unwrap().get()).unwrap(),
        3
    );
    running.stop().await.unwrap();
}

/// `JobError::retry_in(d, e)` is retried after `d` rather than the backoff; the attempt counts
/// and its error is recorded.
pub async fn worker_retry_in_replaces_the_backoff(b: AnyBackend) {
    let clock = Arc::new(ManualClock::new(t0()));
    let running = Running::start(worker(&b).register::<RateLimited>().clock(clock.clone()));
    let job = Enqueue::from(RateLimited {}).run_at(t0());
    let id = job.enqueue(&b).await.unwrap().id();

    let failed = wait_for(&b, id, "the first attempt failed", |r| {
        r.attempt == 1 && r.status == JobStatus::Pending
    })
    .await;
    assert_eq!(
        failed.run_at,
        clock::later(t0(), LATER),
        "not the 1 s backoff"
    );
    assert_eq!(failed.errors.len(), 1);
    assert_eq!(
        (failed.errors[0].kind, failed.errors[0].message.as_str()),
        (ErrorKind::Retryable, "rate limited: retry after 30 s")
    );
    clock.advance(Duration::from_secs(1));
    settle().await;
    assert_eq!(record(&b, id).await.attempt, 1, "the backoff is not used");

    clock.advance(LATER - Duration::from_secs(1));
    let done = wait_for(&b, id, "the job completed", |r| {
        r.status == JobStatus::Completed
    })
    .await;
    assert_eq!((done.attempt, done.errors.len()), (2, 1));
    assert_eq!(done.finished_at, Some(clock::later(t0(), LATER)));
    running.stop().await.unwrap();
}

/// `JobError::snooze(d)` runs the job again after `d`, its attempt not spent and no error
/// recorded.
pub async fn worker_snooze_runs_again_without_spending_an_attempt(b: AnyBackend) {
    let clock = Arc::new(ManualClock::new(t0()));
    let (failed, on_failed) = counter();
    let runs = Counter::default();
    let w = worker(&b)
        .register::<Snoozes>()
        .state(runs.clone())
        .clock(clock.clone())
        .on_failed(on_failed);
    let running = Running::start(w);
    let id = Enqueue::from(Snoozes {})
        .run_at(t0())
        .enqueue(&b)
        .await
        .unwrap()
        .id();

    let snoozed = wait_for(&b, id, "the job snoozed", |r| {
        r.status == JobStatus::Pending && r.run_at > t0()
    })
    .await;
    assert_eq!(snoozed.run_at, clock::later(t0(), LATER));
    assert_eq!(
        (
            snoozed.attempt,
            snoozed.errors.len(),
            snoozed.lease.is_none()
        ),
        (0, 0, true)
    );
    clock.advance(LATER - Duration::from_millis(1));
    settle().await;
    assert_eq!(
        runs.runs().get(&id),
        Some(&1),
        "not run again before its time"
    );

    clock.advance(Duration::from_millis(1));
    let done = wait_for(&b, id, "the job completed", |r| {
        r.status == JobStatus::Completed
    })
    .await;
    assert_eq!((done.attempt, done.errors.len()), (1, 0));
    assert_eq!(
        serde_json::from_str::<u32>(done.result.unwrap().get()).unwrap(),
        1,
        "the second run is still attempt 1"
    );
    running.stop().await.unwrap();
    assert_eq!(runs.runs().get(&id), Some(&2));
    assert_eq!(seen(&failed), 0, "a snooze is not a failure");
}

/// After its last attempt a failing job is dead, out of attempts, with each attempt's error;
/// hooks see it all.
pub async fn worker_dead_after_max_attempts(b: AnyBackend) {
    let (failed, on_failed) = counter();
    let (dead, on_dead) = counter();
    let running = Running::start(
        worker(&b)
            .register::<Fails>()
            .on_failed(on_failed)
            .on_dead(on_dead),
    );
    let handle = Fails { fatal: false }.enqueue(&b).await.unwrap();
    let r = wait_for(&b, handle.id(), "the job is dead", |r| {
        r.status == JobStatus::Dead
    })
    .await;
    let errors: Vec<(u32, ErrorKind, &str)> = r
        .errors
        .iter()
        .map(|e| (e.attempt, e.kind, e.message.as_str()))
        .collect();
    assert_eq!(
        errors,
        [
            (1, ErrorKind::Retryable, "failure in attempt 1"),
            (2, ErrorKind::Retryable, "failure in attempt 2"),
            (3, ErrorKind::Retryable, "failure in attempt 3"),
        ]
    );
    assert_eq!(r.dead_reason(), Some(DeadReason::OutOfAttempts));
    let err = handle.result(&b).await.unwrap_err().to_string();
    assert!(
        err.contains("dead") && err.contains("failure in attempt 3"),
        "{err}"
    );
    running.stop().await.unwrap();
    assert_eq!((seen(&failed), seen(&dead)), (3, 1));
}

/// A fatal error goes straight to dead, whatever attempts remain, recorded as fatal.
pub async fn worker_fatal_error_goes_dead_at_once(b: AnyBackend) {
    let running = Running::start(worker(&b).register::<Fails>());
    let id = Fails { fatal: true }.enqueue(&b).await.unwrap().id();
    let r = wait_for(&b, id, "the job is dead", |r| r.status == JobStatus::Dead).await;
    assert_eq!((r.attempt, r.max_attempts, r.errors.len()), (1, 3, 1));
    assert_eq!(r.errors[0].kind, ErrorKind::Fatal);
    assert_eq!(r.dead_reason(), Some(DeadReason::Fatal));
    running.stop().await.unwrap();
}

/// A panic is a failed attempt of kind `panic` with the panic's message; the worker goes on
/// running jobs.
pub async fn worker_survives_a_panicking_handler(b: AnyBackend) {
    let running = Running::start(worker(&b).register::<Panics>().register::<Echo>());
    let id = Panics {}.enqueue(&b).await.unwrap().id();
    let r = wait_for(&b, id, "the panicking job is dead", |r| {
        r.status == JobStatus::Dead
    })
    .await;
    assert_eq!(
        (r.errors[0].kind, r.errors[0].message.as_str()),
        (ErrorKind::Panic, "handler panicked: boom")
    );
    let after = Echo { n: 4 }.enqueue(&b).await.unwrap();
    assert_eq!(after.wait(&b).await.unwrap(), 8);
    running.stop().await.unwrap();
}

/// A panic while the payload decodes (in a `Deserialize` of the user's own, or an upgrade) fails
/// the attempt as a decode error does: the job is dead at once, its outcome written (it does
/// not stay running), and the worker goes on.
pub async fn worker_survives_a_panicking_decode(b: AnyBackend) {
    let running = Running::start(worker(&b).register::<PanicsDecoding>().register::<Echo>());
    let id = PanicsDecoding {}.enqueue(&b).await.unwrap().id();
    let r = wait_for(&b, id, "the job is dead", |r| r.status == JobStatus::Dead).await;
    assert_eq!(
        (r.attempt, r.errors[0].kind, r.errors[0].message.as_str()),
        (
            1,
            ErrorKind::Decode,
            "payload decoding panicked: undecodable"
        ),
        "one attempt of three: the same bytes would panic again"
    );
    let after = Echo { n: 4 }.enqueue(&b).await.unwrap();
    assert_eq!(after.wait(&b).await.unwrap(), 8);
    running.stop().await.unwrap();
}

/// A worker hook that panics (`on_completed`, say) is logged: the outcomes of the jobs after
/// it are written all the same, and the hooks after it are called.
pub async fn worker_survives_a_panicking_hook(b: AnyBackend) {
    let (heard, hear) = counter();
    let w = worker(&b)
        .register::<Echo>()
        .on_completed(|_| panic!("hook bug"))
        .on_completed(hear);
    let running = Running::start(w);
    for n in 0..3 {
        let handle = Echo { n }.enqueue(&b).await.unwrap();
        assert_eq!(handle.wait(&b).await.unwrap(), n * 2, "job {n} completes");
    }
    eventually("the next hook hears every job", || async {
        heard.load(std::sync::atomic::Ordering::SeqCst) == 3
    })
    .await;
    running.stop().await.unwrap();
}

/// A payload that no longer deserializes is a failed attempt of kind `decode` with a clear
/// error; as no retry of the same bytes can succeed, the job is dead at once.
pub async fn worker_fails_an_undeserializable_payload(b: AnyBackend) {
    let running = Running::start(worker(&b).register::<Echo>());
    let mut stale = new_job(Echo::NAME);
    stale.payload = json(r#"{"count":"seven"}"#);
    stale.run_at = SystemClock.now();
    let stale_id = put_at(&b, stale, SystemClock.now()).await;
    let r = wait_for(&b, stale_id, "the stale job is dead", |r| {
        r.status == JobStatus::Dead
    })
    .await;
    let error = &r.errors[0];
    assert_eq!(
        (error.kind, r.attempt, r.errors.len()),
        (ErrorKind::Decode, 1, 1)
    );
    assert!(
        error.message.contains("payload does not deserialize")
            && error.message.contains("missing field `n`"),
        "{}",
        error.message
    );
    assert_eq!(r.dead_reason(), Some(DeadReason::Fatal));
    running.stop().await.unwrap();
}

/// A job of a name the worker does not run (a newer release's, during a deploy) is left
/// waiting in its place, no attempt spent, while the worker runs the jobs it knows around it;
/// the operations API lists it as stranded.
pub async fn worker_leaves_a_job_of_an_unknown_name_waiting(b: AnyBackend) {
    let running = Running::start(worker(&b).register::<Echo>());
    let mut unknown = new_job("conformance.newer");
    unknown.run_at = SystemClock.now();
    let unknown_id = put_at(&b, unknown, SystemClock.now()).await;
    let known = Echo { n: 4 }.enqueue(&b).await.unwrap();
    assert_eq!(known.wait(&b).await.unwrap(), 8, "the job behind it runs");
    poll_until(
        "the worker's heartbeat is recorded",
        Duration::from_secs(10),
        Duration::from_millis(20),
        || async { !b.workers().await.unwrap().is_empty() },
    )
    .await;
    let stranded = b.stranded().await.unwrap();
    assert_eq!(
        stranded
            .iter()
            .map(|s| (s.queue.as_str(), s.name.as_str(), s.jobs, s.oldest))
            .collect::<Vec<_>>(),
        vec![(QUEUE, "conformance.newer", 1, unknown_id)],
        "the job no live worker runs is stranded"
    );
    settle().await;
    let r = read(&b, unknown_id).await.expect("stored");
    assert_eq!(
        (r.status, r.attempt, r.errors.len()),
        (JobStatus::Pending, 0, 0),
        "the unknown job waits, untouched"
    );
    running.stop().await.unwrap();
}

/// An attempt running past its timeout is failed with kind `timeout`.
pub async fn worker_times_out_slow_attempts(b: AnyBackend) {
    let running = Running::start(worker(&b).register::<Sleeps>());
    let id = Sleeps { ms: 30_000 }
        .timeout(Duration::from_millis(50))
        .enqueue(&b)
        .await
        .unwrap()
        .id();
    let r = wait_for(&b, id, "the slow job is dead", |r| {
        r.status == JobStatus::Dead
    })
    .await;
    assert_eq!(
        (r.errors[0].kind, r.errors[0].message.as_str()),
        (ErrorKind::Timeout, "timed out after 50ms")
    );
    assert_eq!(r.dead_reason(), Some(DeadReason::OutOfAttempts));
    running.stop().await.unwrap();
}
