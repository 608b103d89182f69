//! Bulk operations through [`Operations`]: retry, cancel or delete every job matching a filter
//! (more than one store batch of them), and purge.

use std::collections::HashMap;

use super::*;

/// Enqueues `jobs` (all of one queue, which holds no other ready job) at `t0` and fails each
/// once, with no retry: they are dead.
async fn dead_jobs(b: &AnyBackend, jobs: Vec<NewJob>) -> Vec<JobId> {
    let n = jobs.len();
    let queue = jobs[0].queue.clone();
    let ids = put_many(b, jobs, t0()).await;
    let leased = b
        .fetch(fetch_params(&[queue.as_str()], n, t0()))
        .await
        .unwrap();
    assert_eq!(leased.len(), n);
    let items = leased
        .iter()
        .map(|j| Failure {
            lease: j.lease(),
            error: ErrorReport::new(ErrorKind::Retryable, "down"),
            retry_at: None,
        })
        .collect();
    let failed = b.fail(FailParams { items, now: at(1) }).await.unwrap();
    assert_eq!(failed, vec![true; n]);
    ids
}

/// Every stored job as JSON, by id: to tell which ones an operation changed.
async fn snapshot(b: &AnyBackend) -> HashMap<JobId, serde_json::Value> {
    let params = ListParams {
        filter: JobFilter::new(),
        after: None,
        limit: 10_000,
    };
    let jobs = b.list(params).await.unwrap();
    jobs.into_iter()
        .map(|r| (r.id, serde_json::to_value(&r).expect("a record serializes")))
        .collect()
}

/// `retry_all` retries every matching dead job, over several store batches, and skips those
/// whose unique key another active job holds.
pub async fn manage_retry_by_filter_in_batches(b: AnyBackend) {
    let mut jobs: Vec<NewJob> = (0..1_202).map(|_| new_job("bulk.retried")).collect();
    let held_at = [499, 1_000];
    for (n, &i) in held_at.iter().enumerate() {
        jobs[i].unique_key = Some(format!("held:{n}"));
    }
    let ids = dead_jobs(&b, jobs).await;
    let mut holders = Vec::new();
    for n in 0..held_at.len() {
        let mut holder = new_job("bulk.holder");
        holder.unique_key = Some(format!("held:{n}"));
        holders.push(put_at(&b, holder, at(2)).await);
    }
    let mut other = new_job("bulk.retried");
    other.queue = OTHER_QUEUE.into();
    let elsewhere = dead_jobs(&b, vec![other]).await[0];

    let filter = JobFilter::new().queue(QUEUE).status(JobStatus::Dead);
    assert_eq!(b.retry_all(&filter).await.unwrap(), 1_200);
    let c = counts(&b).await;
    assert_eq!(
        (c.pending, c.dead),
        (1_202, 2),
        "1,200 retried and 2 holders"
    );
    for (i, holder) in held_at.iter().zip(&holders) {
        let r = record(&b, ids[*i]).await;
        assert_eq!(r.status, JobStatus::Dead, "held by {holder}");
    }
    let retried = record(&b, ids[1_201]).await;
    assert_eq!((retried.status, retried.attempt), (JobStatus::Pending, 0));
    assert_eq!(record(&b, elsewhere).await.status, JobStatus::Dead);
    assert_eq!(
        b.retry_all(&filter).await.unwrap(),
        0,
        "only held ones left"
    );
}

/// `cancel_all` cancels every matching active job (running ones too), over several store
/// batches, across queues, and leaves finished jobs alone.
pub async fn manage_cancel_by_filter_in_batches(b: AnyBackend) {
    let tagged = |i: usize| {
        let mut job = new_job("bulk.cancelled");
        job.tags = vec!["campaign:9".into()];
        if i % 2 == 1 {
            job.queue = OTHER_QUEUE.into();
        }
        job
    };
    put_many(&b, (0..1_100).map(tagged), t0()).await;
    let untagged = (0..20).map(|_| new_job("bulk.cancelled"));
    put_many(&b, untagged, t0()).await;
    let leased = fetch(&b, 60, t0()).await;
    assert!(leased.iter().all(|j| j.record.tags == ["campaign:9"]));
    for job in &leased[..10] {
        assert!(complete(&b, job, "null", at(1)).await);
    }

    let filter = JobFilter::new().tag("campaign:9");
    assert_eq!(b.cancel_all(&filter).await.unwrap(), 1_090);
    let c = counts(&b).await;
    assert_eq!(
        (c.cancelled, c.completed, c.pending, c.running),
        (540, 10, 20, 0)
    );
    let other = b
        .counts(CountsParams {
            queue: OTHER_QUEUE.into(),
        })
        .await
        .unwrap();
    assert_eq!((other.cancelled, other.pending), (550, 0));
    assert!(
        !complete(&b, &leased[10], "null", at(2)).await,
        "a cancelled running job's lease is revoked"
    );
    assert_eq!(b.cancel_all(&filter).await.unwrap(), 0);
}

/// `delete_all` deletes every matching job in any status, over several store batches.
pub async fn manage_delete_by_filter_in_batches(b: AnyBackend) {
    put_many(&b, (0..1_300).map(|_| new_job("bulk.old")), t0()).await;
    let leased = fetch(&b, 100, t0()).await;
    for job in &leased[..50] {
        assert!(complete(&b, job, "null", at(1)).await);
    }
    put_many(&b, (0..20).map(|_| new_job("bulk.new")), at(2)).await;

    let filter = JobFilter::new().name("bulk.old");
    assert_eq!(b.delete_all(&filter).await.unwrap(), 1_300);
    assert!(listed(&b, filter.clone()).await.is_empty());
    let c = counts(&b).await;
    assert_eq!(
        c,
        QueueCounts {
            pending: 20,
            ..QueueCounts::default()
        }
    );
    assert_eq!(b.delete_all(&filter).await.unwrap(), 0);
}

/// Bulk operations change the jobs their filter matches (and the action applies to), and no
/// other job in any way.
pub async fn manage_bulk_touches_only_matching_jobs(b: AnyBackend) {
    let mut step = 0;
    for queue in [QUEUE, OTHER_QUEUE] {
        for name in ["bulk.a", "bulk.b"] {
            for status in JobStatus::ALL {
                for tags in [vec![], vec!["t".to_string()]] {
                    let mut job = new_job(name);
                    job.queue = queue.to_string();
                    job.tags = tags;
                    job_in(&b, job, status, at(step)).await;
                    step += 1;
                }
            }
        }
    }
    let retried = JobFilter::new().name("bulk.a").status(JobStatus::Dead);
    let cancelled = JobFilter::new().queue(OTHER_QUEUE).tag("t");
    let deleted = JobFilter::new().created_before(at(step / 2));
    let applies = |action: Action, r: &serde_json::Value| {
        let status: JobStatus = serde_json::from_value(r["status"].clone()).unwrap();
        match action {
            Action::Retry => matches!(status, JobStatus::Dead | JobStatus::Cancelled),
            Action::Cancel => status.is_active(),
            Action::Delete => true,
        }
    };
    for (action, filter) in [
        (Action::Retry, retried),
        (Action::Cancel, cancelled),
        (Action::Delete, deleted),
    ] {
        let before = snapshot(&b).await;
        let expected: Vec<JobId> = before
            .iter()
            .filter(|(_, r)| {
                let record: JobRecord = serde_json::from_value((*r).clone()).unwrap();
                filter.matches(&record) && applies(action, r)
            })
            .map(|(id, _)| *id)
            .collect();
        assert!(!expected.is_empty(), "{action:?} has jobs to change");
        let changed = match action {
            Action::Retry => b.retry_all(&filter).await,
            Action::Cancel => b.cancel_all(&filter).await,
            Action::Delete => b.delete_all(&filter).await,
        };
        assert_eq!(
            changed.unwrap(),
            expected.len() as u64,
            "{action:?} {filter:?}"
        );
        let after = snapshot(&b).await;
        for (id, was) in &before {
            if !expected.contains(id) {
                assert_eq!(after.get(id), Some(was), "{action:?} left {id} alone");
            } else if action == Action::Delete {
                assert!(!after.contains_key(id));
            } else {
                assert_ne!(after.get(id), Some(was), "{action:?} changed {id}");
            }
        }
    }
}

/// `purge` deletes the jobs in one finished status that finished before a time, and refuses
/// active statuses.
pub async fn manage_purge_by_status_and_finish_time(b: AnyBackend) {
    let mut ids = HashMap::new();
    for (status, ms) in [
        (JobStatus::Completed, 1_000),
        (JobStatus::Completed, 2_000),
        (JobStatus::Completed, 3_000),
        (JobStatus::Dead, 1_000),
        (JobStatus::Dead, 2_500),
        (JobStatus::Cancelled, 1_500),
        (JobStatus::Pending, 0),
    ] {
        ids.insert(
            (status, ms),
            job_in(&b, new_job("purged"), status, at(ms)).await,
        );
    }
    assert_eq!(b.purge(JobStatus::Completed, at(2_500)).await.unwrap(), 2);
    assert_eq!(
        b.purge(JobStatus::Dead, at(2_500)).await.unwrap(),
        1,
        "strictly before"
    );
    assert_eq!(b.purge(JobStatus::Cancelled, at(1_500)).await.unwrap(), 0);
    assert_eq!(b.purge(JobStatus::Cancelled, at(1_501)).await.unwrap(), 1);
    let mut left = listed(&b, JobFilter::new()).await;
    left.sort();
    let mut expected = vec![
        ids[&(JobStatus::Completed, 3_000)],
        ids[&(JobStatus::Dead, 2_500)],
        ids[&(JobStatus::Pending, 0)],
    ];
    expected.sort();
    assert_eq!(left, expected);
    for active in [JobStatus::Scheduled, JobStatus::Pending, JobStatus::Running] {
        let refused = b.purge(active, at(100_000)).await;
        assert!(
            matches!(refused, Err(Error::Invalid(_))),
            "{active}: {refused:?}"
        );
    }
    assert_eq!(listed(&b, JobFilter::new()).await.len(), 3);
}
