//! Retrying, cancelling and deleting jobs one by one: the store's `manage` with explicit
//! times, and what [`Operations`] reports when it cannot.

use super::*;

/// A dead or cancelled job goes back to pending, due at `now`, with fresh attempts and its
/// error history; jobs in other statuses are left alone.
pub async fn manage_retry_revives_dead_and_cancelled_jobs(b: AnyBackend) {
    let dead = job_in(&b, new_job("revived"), JobStatus::Dead, at(10)).await;
    let cancelled = job_in(&b, new_job("revived"), JobStatus::Cancelled, at(20)).await;
    let completed = job_in(&b, new_job("revived"), JobStatus::Completed, at(30)).await;
    let running = job_in(&b, new_job("revived"), JobStatus::Running, at(40)).await;

    let ids = [JobId::new(), dead, cancelled, completed, running];
    let retried = manage_ids(&b, Action::Retry, &ids, at(1_000)).await;
    assert_eq!(
        retried.changed,
        vec![dead, cancelled],
        "missing ids are skipped"
    );
    assert!(retried.held.is_empty());
    for id in [dead, cancelled] {
        let r = record(&b, id).await;
        assert_eq!(
            (
                r.status,
                r.attempt,
                r.run_at,
                r.finished_at,
                r.lease.is_none()
            ),
            (JobStatus::Pending, 0, at(1_000), None, true)
        );
    }
    assert_eq!(
        record(&b, dead).await.errors.len(),
        1,
        "the history is kept"
    );
    assert_eq!(record(&b, completed).await.status, JobStatus::Completed);
    assert_eq!(record(&b, running).await.status, JobStatus::Running);
    let again = manage_ids(&b, Action::Retry, &[dead], at(1_000)).await;
    assert!(again.changed.is_empty(), "only dead or cancelled jobs");

    let c = counts(&b).await;
    assert_eq!((c.pending, c.dead, c.cancelled), (2, 0, 0));
    let got = fetch(&b, 5, at(1_000)).await;
    let fetched: Vec<(JobId, u32)> = got
        .iter()
        .map(|j| (j.record.id, j.record.attempt))
        .collect();
    assert_eq!(fetched, vec![(dead, 1), (cancelled, 1)]);
}

/// Cancelling takes scheduled, pending and running jobs to cancelled (revoking a running
/// job's lease) and leaves finished jobs alone.
pub async fn manage_cancel_revokes_active_jobs_only(b: AnyBackend) {
    let pending = put(&b, new_job("cancelled")).await;
    let cancel = |id, now| {
        let b = &b;
        async move { manage_ids(b, Action::Cancel, &[id], now).await }
    };
    assert_eq!(cancel(pending, at(5)).await.changed, vec![pending]);
    let r = record(&b, pending).await;
    assert_eq!(
        (r.status, r.finished_at),
        (JobStatus::Cancelled, Some(at(5)))
    );
    assert!(cancel(pending, at(6)).await.changed.is_empty());
    assert!(fetch(&b, 5, at(10)).await.is_empty());

    let scheduled = job_in(&b, new_job("cancelled"), JobStatus::Scheduled, at(10)).await;
    assert_eq!(cancel(scheduled, at(11)).await.changed, vec![scheduled]);
    assert!(fetch(&b, 5, at(100_000_000)).await.is_empty());

    let running = put(&b, new_job("cancelled")).await;
    let got = fetch_one(&b, at(10)).await;
    assert_eq!(cancel(running, at(20)).await.changed, vec![running]);
    assert!(
        !complete(&b, &got, "1", at(30)).await,
        "a cancelled job's lease is revoked"
    );
    let renew = RenewParams {
        items: vec![got.lease()],
        expires_at: at(9_000),
        now: at(30),
    };
    assert_eq!(b.renew(renew).await.unwrap(), vec![false]);
    let r = record(&b, running).await;
    assert_eq!(
        (r.status, r.lease.is_none(), r.finished_at),
        (JobStatus::Cancelled, true, Some(at(20)))
    );

    let completed = job_in(&b, new_job("kept"), JobStatus::Completed, at(40)).await;
    let dead = job_in(&b, new_job("kept"), JobStatus::Dead, at(50)).await;
    let finished = manage_ids(&b, Action::Cancel, &[completed, dead], at(60)).await;
    assert!(
        finished.changed.is_empty(),
        "finished jobs stay as they are"
    );
    assert_eq!(record(&b, completed).await.status, JobStatus::Completed);
    assert_eq!(record(&b, dead).await.status, JobStatus::Dead);
    let c = counts(&b).await;
    assert_eq!((c.cancelled, c.completed, c.dead), (3, 1, 1));
}

/// Deleting removes a job in any status for good: it cannot be read, listed, counted, written
/// under its lease or rescued, and its unique key is free.
pub async fn manage_delete_removes_a_job_with_its_indexes(b: AnyBackend) {
    let mut keyed = new_job("deleted");
    keyed.unique_key = Some("report:1".into());
    keyed.tags = vec!["report".into()];
    let pending = put(&b, keyed.clone()).await;
    let mut first = new_job("deleted");
    first.priority = -1;
    let running = put(&b, first).await;
    let got = fetch_one(&b, t0()).await;
    assert_eq!(got.record.id, running);
    let dead = job_in(&b, new_job("deleted"), JobStatus::Dead, at(1)).await;
    let completed = job_in(&b, new_job("deleted"), JobStatus::Completed, at(2)).await;
    let scheduled = job_in(&b, new_job("deleted"), JobStatus::Scheduled, at(3)).await;
    let all = [pending, running, dead, completed, scheduled];

    let deleted = manage_ids(&b, Action::Delete, &all, at(10)).await;
    assert_eq!(deleted.changed, all.to_vec());
    for id in all {
        assert!(read(&b, id).await.is_none(), "{id} is gone");
    }
    assert!(listed(&b, JobFilter::new()).await.is_empty());
    assert!(listed(&b, JobFilter::new().tag("report")).await.is_empty());
    assert_eq!(counts(&b).await, QueueCounts::default());
    assert!(!complete(&b, &got, "1", at(20)).await, "no job to complete");
    assert!(b
        .rescue(RescueParams {
            target: RescueTarget::Lapsed,
            now: at(60_000),
            limit: 10,
            error: ErrorReport::lease_expired(),
        })
        .await
        .unwrap()
        .is_empty());
    keyed.id = JobId::new();
    let replacement = b
        .enqueue(EnqueueParams {
            jobs: vec![keyed.clone()],
            now: at(30),
        })
        .await
        .unwrap();
    assert_eq!(
        replacement,
        vec![Enqueued {
            id: keyed.id,
            duplicate: false
        }],
        "the deleted job's key is free"
    );
    let again = manage_ids(&b, Action::Delete, &[pending], at(40)).await;
    assert!(again.changed.is_empty());
}

/// A retry is refused while another active job of the queue holds the job's unique key: the
/// store reports the holder, and `Operations::retry` fails with it.
pub async fn manage_retry_reports_a_held_unique_key(b: AnyBackend) {
    let mut keyed = new_job("unique");
    keyed.unique_key = Some("user:2".into());
    let dead = job_in(&b, keyed.clone(), JobStatus::Dead, at(1)).await;
    keyed.id = JobId::new();
    let holder = put_at(&b, keyed.clone(), at(2)).await;
    assert_ne!(holder, dead, "dead jobs hold no key");

    let refused = manage_ids(&b, Action::Retry, &[dead], at(3)).await;
    assert!(refused.changed.is_empty());
    assert_eq!(
        refused.held,
        vec![HeldKey {
            job: dead,
            key: "user:2".into(),
            holder
        }]
    );
    match b.retry(dead).await {
        Err(Error::UniqueKeyHeld {
            job,
            key,
            holder: by,
        }) => assert_eq!((job, key.as_str(), by), (dead, "user:2", holder)),
        other => panic!("retry while the key is held: {other:?}"),
    }
    assert_eq!(record(&b, dead).await.status, JobStatus::Dead);

    let mut elsewhere = keyed.clone();
    elsewhere.id = JobId::new();
    elsewhere.queue = OTHER_QUEUE.into();
    let other_dead = job_in(&b, elsewhere, JobStatus::Dead, at(4)).await;
    b.retry(other_dead)
        .await
        .expect("a key held in another queue does not count");

    let leased = fetch_one(&b, at(5)).await;
    assert_eq!(leased.record.id, holder);
    assert!(complete(&b, &leased, "null", at(6)).await);
    b.retry(dead).await.expect("the key is free again");
    keyed.id = JobId::new();
    let duplicate = put_at(&b, keyed, at(7)).await;
    assert_eq!(duplicate, dead, "the retried job holds its key again");
}

/// `Operations` says why one job could not be retried, cancelled or deleted: it does not
/// exist, or it is in a status the operation does not apply to.
pub async fn manage_one_reports_not_found_and_wrong_status(b: AnyBackend) {
    let missing = JobId::new();
    let not_found =
        |result: Result<(), Error>| matches!(result, Err(Error::NotFound(id)) if id == missing);
    assert!(not_found(b.retry(missing).await));
    assert!(not_found(b.cancel(missing).await));
    assert!(not_found(b.delete(missing).await));

    let wrong = |result: Result<(), Error>,
                 want: JobId,
                 want_status: JobStatus,
                 want_action: &str| match result {
        Err(Error::WrongStatus { id, status, action }) => {
            assert_eq!((id, status, action), (want, want_status, want_action))
        }
        other => panic!("expected {want} to be {want_status} for {want_action}: {other:?}"),
    };
    let pending = put(&b, new_job("one")).await;
    wrong(b.retry(pending).await, pending, JobStatus::Pending, "retry");
    let completed = job_in(&b, new_job("one"), JobStatus::Completed, at(1)).await;
    wrong(
        b.cancel(completed).await,
        completed,
        JobStatus::Completed,
        "cancel",
    );
    wrong(
        b.retry(completed).await,
        completed,
        JobStatus::Completed,
        "retry",
    );

    b.cancel(pending).await.expect("cancel a pending job");
    assert_eq!(b.job(pending).await.unwrap().status, JobStatus::Cancelled);
    wrong(
        b.cancel(pending).await,
        pending,
        JobStatus::Cancelled,
        "cancel",
    );
    b.retry(pending).await.expect("retry a cancelled job");
    assert_eq!(b.job(pending).await.unwrap().status, JobStatus::Pending);
    b.delete(pending).await.expect("delete a job");
    assert!(matches!(b.delete(pending).await, Err(Error::NotFound(id)) if id == pending));
    assert!(matches!(b.job(pending).await, Err(Error::NotFound(id)) if id == pending));
}

/// By filter, one call examines at most `limit` matching jobs after the cursor, in id order,
/// and names the last one as the next cursor while `limit` of them matched.
pub async fn manage_by_filter_examines_a_bounded_batch(b: AnyBackend) {
    let mut ids = Vec::new();
    for i in 0..7 {
        let status = if i % 3 == 1 {
            JobStatus::Pending
        } else {
            JobStatus::Dead
        };
        ids.push(job_in(&b, new_job("batched"), status, at(i)).await);
    }
    let mut other = new_job("batched");
    other.queue = OTHER_QUEUE.into();
    let untouched = job_in(&b, other, JobStatus::Dead, at(10)).await;
    let batch = |action, after, limit| {
        let filter = JobFilter::new().queue(QUEUE);
        b.manage(ManageParams {
            action,
            target: Target::Matching { filter, after },
            limit,
            now: at(100),
        })
    };

    // ids: dead, pending, dead, dead, pending, dead, dead
    let first = batch(Action::Retry, None, 3).await.unwrap();
    assert_eq!(
        first.changed,
        vec![ids[0], ids[2]],
        "pending ones examined, not changed"
    );
    assert_eq!(first.last, Some(ids[2]));
    let second = batch(Action::Retry, first.last, 3).await.unwrap();
    assert_eq!(
        (second.changed, second.last),
        (vec![ids[3], ids[5]], Some(ids[5]))
    );
    let third = batch(Action::Retry, second.last, 3).await.unwrap();
    assert_eq!(
        (third.changed, third.last),
        (vec![ids[6]], None),
        "fewer than 3 matched"
    );
    let c = counts(&b).await;
    assert_eq!((c.pending, c.dead), (7, 0));
    assert_eq!(record(&b, untouched).await.status, JobStatus::Dead);

    let exactly = batch(Action::Cancel, None, 7).await.unwrap();
    assert_eq!((exactly.changed, exactly.last), (ids.clone(), Some(ids[6])));
    let after_all = batch(Action::Cancel, exactly.last, 7).await.unwrap();
    assert_eq!(after_all, Managed::default(), "nothing after the last");
}
