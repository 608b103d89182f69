//! Leases: fencing of stale holders, renewal, handing jobs back and rescuing lapsed leases.

use std::time::Duration;

use super::*;

fn rescue_at(now: Timestamp) -> RescueParams {
    RescueParams {
        target: RescueTarget::Lapsed,
        now,
        limit: 10,
        error: ErrorReport::lease_expired(),
    }
}

fn release(job: &LeasedJob, run_at: Option<Timestamp>, now: Timestamp) -> ReleaseParams {
    ReleaseParams {
        items: vec![Release {
            lease: job.lease(),
            run_at,
        }],
        now,
    }
}

/// After a lease lapses and the job is handed to another worker, every write of the old lease
/// holder is refused and the new holder's stand.
pub async fn lease_of_a_stale_holder_is_fenced(b: AnyBackend) {
    let id = put(&b, new_job("fenced")).await;
    let first = fetch_one(&b, t0()).await;
    let lease_a = first.lease();
    let held = first
        .record
        .lease
        .clone()
        .expect("a running job has a lease");
    assert_eq!((&*held.worker, held.expires_at), ("checker", at(5_000)));
    let progress = |lease, progress, now| ProgressParams {
        lease,
        progress,
        now,
    };
    assert!(b.progress(progress(lease_a, 30, at(100))).await.unwrap());
    assert_eq!(record(&b, id).await.progress, 30);

    assert!(b.rescue(rescue_at(at(4_000))).await.unwrap().is_empty());
    assert_eq!(b.rescue(rescue_at(at(6_000))).await.unwrap(), vec![id]);
    let rescued = record(&b, id).await;
    assert_eq!((rescued.status, rescued.attempt), (JobStatus::Pending, 1));

    let second = fetch_one(&b, at(6_000)).await;
    assert_ne!(
        second.token, first.token,
        "each fetch hands out a fresh token"
    );
    assert_eq!(second.record.attempt, 2);

    assert!(
        !complete(&b, &first, "1", at(6_100)).await,
        "stale completion refused"
    );
    assert!(
        !fail(&b, &first, "late", None, at(6_100)).await,
        "stale failure refused"
    );
    assert!(!b.progress(progress(lease_a, 90, at(6_100))).await.unwrap());
    let renew = RenewParams {
        items: vec![lease_a],
        expires_at: at(20_000),
        now: at(6_100),
    };
    assert_eq!(b.renew(renew).await.unwrap(), vec![false]);
    assert_eq!(
        b.release(release(&first, None, at(6_100))).await.unwrap(),
        vec![false]
    );
    let current = record(&b, id).await;
    assert_eq!(
        (current.status, current.lease.map(|l| l.token)),
        (JobStatus::Running, Some(second.token))
    );
    assert_eq!(current.progress, 30, "the stale progress was refused");

    assert!(complete(&b, &second, r#"{"ok":true}"#, at(6_200)).await);
    let done = record(&b, id).await;
    assert_eq!(
        (done.status, done.finished_at),
        (JobStatus::Completed, Some(at(6_200)))
    );
    assert_eq!(
        value(done.result.as_ref().expect("a result")),
        serde_json::json!({"ok": true})
    );
    assert!(done.lease.is_none());
    assert!(
        !complete(&b, &first, "2", at(6_300)).await,
        "a stale completion stays refused once the job completed"
    );
}

/// A completion repeated under the lease it applied under (its reply was cut, say) is accepted
/// again and changes nothing; one under any other token is refused, a stale holder's included
/// once another worker completed the job.
pub async fn lease_complete_repeated_after_it_applied_is_accepted(b: AnyBackend) {
    let id = put(&b, new_job("repeated")).await;
    let got = fetch_one(&b, t0()).await;
    assert!(complete(&b, &got, r#"{"n":1}"#, at(100)).await);
    assert!(
        complete(&b, &got, r#"{"n":2}"#, at(200)).await,
        "the repeated completion is recognised as applied"
    );
    let done = record(&b, id).await;
    assert_eq!(
        (done.status, done.finished_at, done.lease),
        (JobStatus::Completed, Some(at(100)), None),
        "a completed job reports no lease"
    );
    assert_eq!(
        value(done.result.as_ref().expect("a result")),
        serde_json::json!({"n": 1}),
        "the first result stays"
    );
    let forged = CompleteParams {
        items: vec![Completion {
            lease: LeaseRef {
                id,
                token: LeaseToken::new(),
            },
            result: json("3"),
        }],
        now: at(300),
    };
    assert_eq!(b.complete(forged).await.unwrap(), vec![false]);

    let other = put(&b, new_job("repeated")).await;
    let stale = fetch_one(&b, at(1_000)).await;
    assert_eq!(stale.record.id, other);
    assert_eq!(b.rescue(rescue_at(at(7_000))).await.unwrap(), vec![other]);
    let mut params = fetch_params(&[QUEUE], 1, at(7_000));
    params.worker = "another".to_string();
    let fresh = b.fetch(params).await.unwrap().remove(0);
    assert_eq!(fresh.record.id, other);
    assert_ne!(fresh.token, stale.token);
    assert!(complete(&b, &fresh, r#""fresh""#, at(7_100)).await);
    assert!(
        !complete(&b, &stale, r#""stale""#, at(7_200)).await,
        "the stale holder's late completion is refused"
    );
    let batch = CompleteParams {
        items: [&got, &fresh, &stale]
            .map(|job| Completion {
                lease: job.lease(),
                result: json("null"),
            })
            .to_vec(),
        now: at(7_300),
    };
    assert_eq!(b.complete(batch).await.unwrap(), vec![true, true, false]);
    let r = record(&b, other).await;
    assert_eq!(
        (r.status, r.finished_at, r.lease),
        (JobStatus::Completed, Some(at(7_100)), None)
    );
    assert_eq!(
        value(r.result.as_ref().expect("a result")),
        serde_json::json!("fresh")
    );
    assert_eq!(
        value(record(&b, id).await.result.as_ref().expect("a result")),
        serde_json::json!({"n": 1})
    );
    let c = counts(&b).await;
    assert_eq!((c.completed, c.running, c.pending), (2, 0, 0));

    // A batch mixing a job completed now with a repeat: each is accepted once, the new one
    // with its own result, and counted once.
    let third = put(&b, new_job("repeated")).await;
    let running = fetch_one(&b, at(8_000)).await;
    assert_eq!(running.record.id, third);
    let mixed = CompleteParams {
        items: [(&running, r#""third""#), (&got, "null"), (&stale, "null")]
            .map(|(job, result)| Completion {
                lease: job.lease(),
                result: json(result),
            })
            .to_vec(),
        now: at(8_100),
    };
    assert_eq!(b.complete(mixed).await.unwrap(), vec![true, true, false]);
    let r = record(&b, third).await;
    assert_eq!(
        (r.status, r.finished_at, r.lease),
        (JobStatus::Completed, Some(at(8_100)), None)
    );
    assert_eq!(
        value(r.result.as_ref().expect("a result")),
        serde_json::json!("third")
    );
    let c = counts(&b).await;
    assert_eq!((c.completed, c.running, c.pending), (3, 0, 0));
}

/// Renewal extends a live lease, and refuses a wrong token or a lease that already lapsed.
pub async fn renew_extends_only_live_leases(b: AnyBackend) {
    let id = put(&b, new_job("renewed")).await;
    let got = fetch_one(&b, t0()).await;
    let renew = |expires_at, now| RenewParams {
        items: vec![got.lease()],
        expires_at,
        now,
    };
    assert_eq!(
        b.renew(renew(at(8_000), at(3_000))).await.unwrap(),
        vec![true]
    );
    assert_eq!(record(&b, id).await.lease.unwrap().expires_at, at(8_000));
    assert!(b.rescue(rescue_at(at(7_000))).await.unwrap().is_empty());
    let wrong = RenewParams {
        items: vec![LeaseRef {
            id,
            token: LeaseToken::new(),
        }],
        expires_at: at(9_000),
        now: at(7_000),
    };
    assert_eq!(b.renew(wrong).await.unwrap(), vec![false]);
    assert_eq!(
        b.renew(renew(at(20_000), at(9_000))).await.unwrap(),
        vec![false],
        "lapsed"
    );
}

/// A job released without a `run_at` is pending again with its attempt not counted, and keeps
/// its `run_at` (its place in the queue).
pub async fn release_gives_the_attempt_back_and_keeps_run_at(b: AnyBackend) {
    let mut job = new_job("released");
    job.run_at = at(-500);
    let id = put(&b, job).await;
    let got = fetch_one(&b, t0()).await;
    let later = put(&b, new_job("released")).await;
    assert_eq!(
        b.release(release(&got, None, at(100))).await.unwrap(),
        vec![true]
    );
    let r = record(&b, id).await;
    assert_eq!(
        (r.status, r.attempt, r.run_at, r.lease.is_none()),
        (JobStatus::Pending, 0, at(-500), true)
    );
    assert!(r.errors.is_empty(), "a release records no error");
    let again = fetch_one(&b, at(200)).await;
    assert_eq!(
        (again.record.id, again.record.attempt),
        (id, 1),
        "still ahead of {later}"
    );
}

/// A job released with a `run_at` (snoozed) waits for it, its attempt not counted and no error
/// recorded.
pub async fn release_with_run_at_snoozes_the_job(b: AnyBackend) {
    let id = put(&b, new_job("snoozed")).await;
    let got = fetch_one(&b, t0()).await;
    assert_eq!(
        b.release(release(&got, Some(at(60_000)), at(100)))
            .await
            .unwrap(),
        vec![true]
    );
    let r = record(&b, id).await;
    assert_eq!(
        (r.status, r.attempt, r.run_at, r.lease.is_none()),
        (JobStatus::Pending, 0, at(60_000), true)
    );
    assert!(r.errors.is_empty(), "a snooze records no error");
    assert!(
        fetch(&b, 5, at(59_999)).await.is_empty(),
        "not before run_at"
    );
    let again = fetch_one(&b, at(60_000)).await;
    assert_eq!((again.record.id, again.record.attempt), (id, 1));
}

/// A rescued job records core's lease-expired error (kind `lease_lost`) and keeps its `run_at`:
/// it comes back before jobs that became ready after it.
pub async fn rescue_records_lease_expired_and_keeps_the_job_place(b: AnyBackend) {
    let id = put(&b, new_job("rescued")).await;
    assert_eq!(fetch_one(&b, t0()).await.record.id, id);
    let mut behind = new_job("rescued");
    behind.run_at = at(1_000);
    let behind = put_at(&b, behind, at(1_000)).await;
    assert_eq!(b.rescue(rescue_at(at(6_000))).await.unwrap(), vec![id]);
    let r = record(&b, id).await;
    assert_eq!(
        (r.status, r.attempt, r.run_at, r.lease.is_none()),
        (JobStatus::Pending, 1, t0(), true)
    );
    assert_eq!(
        r.errors,
        vec![AttemptError::new(
            1,
            at(6_000),
            ErrorReport::lease_expired()
        )]
    );
    assert_eq!(r.errors[0].kind, ErrorKind::LeaseLost);
    let next = fetch_one(&b, at(6_000)).await;
    assert_eq!(next.record.id, id, "the rescued job is ahead of {behind}");
}

/// A lapsed lease with no attempts left sends the job to dead, out of attempts.
pub async fn rescue_without_attempts_left_is_dead(b: AnyBackend) {
    let mut job = new_job("lost");
    job.max_attempts = 1;
    let id = put(&b, job).await;
    let mut params = fetch_params(&[QUEUE], 1, t0());
    params.lease_for = Duration::from_secs(1);
    assert_eq!(b.fetch(params).await.unwrap().len(), 1);
    assert_eq!(b.rescue(rescue_at(at(2_000))).await.unwrap(), vec![id]);
    let r = record(&b, id).await;
    assert_eq!(
        (r.status, r.lease.is_none(), r.finished_at),
        (JobStatus::Dead, true, Some(at(2_000)))
    );
    assert_eq!(r.errors[0].kind, ErrorKind::LeaseLost);
    assert_eq!(r.dead_reason(), Some(DeadReason::OutOfAttempts));
    assert!(b.rescue(rescue_at(at(3_000))).await.unwrap().is_empty());
}
