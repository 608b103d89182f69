//! Checks of the `Backend` operations themselves, with explicit times.

use std::collections::HashSet;
use std::time::Duration;

use crate::testing::support::*;
use crate::*;

fn fetch_params(limit: usize, now: Timestamp) -> FetchParams {
    FetchParams {
        queues: vec![QUEUE.to_string()],
        limit,
        worker: "checker".to_string(),
        lease_for: Duration::from_secs(5),
        now,
    }
}

async fn fetch(b: &AnyBackend, limit: usize, now: Timestamp) -> Vec<LeasedJob> {
    b.fetch(fetch_params(limit, now)).await.expect("fetch")
}

async fn fetch_one(b: &AnyBackend, now: Timestamp) -> LeasedJob {
    let mut got = fetch(b, 1, now).await;
    assert_eq!(got.len(), 1, "expected one ready job at {now}");
    got.remove(0)
}

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

async fn fail(
    b: &AnyBackend,
    job: &LeasedJob,
    error: &str,
    retry_at: Option<Timestamp>,
    now: Timestamp,
) -> bool {
    let params = FailParams {
        items: vec![Failure {
            lease: job.lease(),
            error: error.to_string(),
            retry_at,
        }],
        now,
    };
    b.fail(params).await.expect("fail")[0]
}

async fn counts(b: &AnyBackend) -> QueueCounts {
    b.counts(CountsParams {
        queue: QUEUE.to_string(),
    })
    .await
    .expect("counts")
}

fn value(json: &Json) -> serde_json::Value {
    serde_json::from_str(json.get()).expect("valid JSON")
}

/// Enqueued jobs read back by id with every field; delayed ones are `scheduled`.
pub async fn enqueue_and_read(b: AnyBackend) {
    let mut job = new_job("reader");
    job.payload =
        json(r#"{"user_id":7,"email":"a'b\"c@ex.com","note":"ようこそ; DROP TABLE jobs"}"#);
    job.priority = -3;
    job.max_attempts = 4;
    job.backoff = Backoff::linear(Duration::from_millis(1500)).max(Duration::from_secs(60));
    job.timeout = Some(Duration::from_secs(30));
    job.trace_context = Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into());
    let mut delayed = new_job("reader");
    delayed.run_at = at(1_500);
    let stored = b
        .enqueue(EnqueueParams {
            jobs: vec![job.clone(), delayed.clone()],
            now: t0(),
        })
        .await
        .expect("enqueue");
    assert_eq!(
        stored,
        vec![
            Enqueued {
                id: job.id,
                duplicate: false
            },
            Enqueued {
                id: delayed.id,
                duplicate: false
            }
        ]
    );

    let r = record(&b, job.id).await;
    assert_eq!(
        (r.id, r.name.as_str(), r.queue.as_str()),
        (job.id, "reader", QUEUE)
    );
    assert_eq!(value(&r.payload), value(&job.payload));
    assert_eq!(
        (r.priority, r.run_at, r.status),
        (-3, t0(), JobStatus::Pending)
    );
    assert_eq!(
        (r.attempt, r.max_attempts, r.backoff, r.timeout),
        (0, 4, job.backoff, job.timeout)
    );
    assert_eq!(
        (r.progress, r.lease.is_none(), r.result.is_none()),
        (0, true, true)
    );
    assert!(r.errors.is_empty() && r.unique_key.is_none());
    assert_eq!(r.trace_context, job.trace_context);
    assert_eq!(
        (r.created_at, r.started_at, r.finished_at),
        (t0(), None, None)
    );

    let d = record(&b, delayed.id).await;
    assert_eq!((d.status, d.run_at), (JobStatus::Scheduled, at(1_500)));
    let c = counts(&b).await;
    assert_eq!((c.pending, c.scheduled, c.running), (1, 1, 0));
    assert!(b.job(JobId::new()).await.expect("read").is_none());
}

/// Ready jobs come out by priority, then run_at, then FIFO, across the fetched queues.
pub async fn priority_then_run_at_then_fifo(b: AnyBackend) {
    let spec = [
        (10, -3_000),
        (5, -1_000),
        (5, -2_000),
        (10, -3_000),
        (1, 10_000),
        (-2, -500),
    ];
    let mut ids = Vec::new();
    for (priority, offset) in spec {
        let mut job = new_job("ordered");
        job.priority = priority;
        job.run_at = at(offset);
        ids.push(put(&b, job).await);
    }
    let mut other = new_job("ordered");
    other.queue = "conformance-other".into();
    other.priority = 6;
    other.run_at = at(-10_000);
    let other_id = put(&b, other).await;

    let mut order = Vec::new();
    for _ in 0..6 {
        let mut params = fetch_params(1, t0());
        params.queues.push("conformance-other".into());
        let got = b.fetch(params).await.expect("fetch");
        assert_eq!(got.len(), 1);
        order.push(got[0].record.id);
    }
    assert_eq!(
        order,
        vec![ids[5], ids[2], ids[1], other_id, ids[0], ids[3]]
    );
    assert!(
        fetch(&b, 10, t0()).await.is_empty(),
        "the delayed job is not ready yet"
    );
    assert_eq!(fetch_one(&b, at(10_000)).await.record.id, ids[4]);
}

/// A delayed job is not fetched a millisecond before its run_at, and is at run_at.
pub async fn delayed_jobs_wait_for_run_at(b: AnyBackend) {
    let mut job = new_job("delayed");
    job.run_at = at(60_000);
    let id = put(&b, job).await;
    assert!(fetch(&b, 5, t0()).await.is_empty());
    assert!(fetch(&b, 5, at(59_999)).await.is_empty());
    let got = fetch_one(&b, at(60_000)).await;
    assert_eq!(got.record.id, id);
    assert_eq!(
        (got.record.status, got.record.attempt),
        (JobStatus::Running, 1)
    );
    assert_eq!(got.record.started_at, Some(at(60_000)));
}

/// After a lease lapses and the job is handed to another worker, every write of the old lease
/// holder is refused and the new holder's stand.
pub async fn stale_lease_is_fenced(b: AnyBackend) {
    let id = put(&b, new_job("fenced")).await;
    let first = fetch_one(&b, t0()).await;
    let lease_a = first.lease();
    let held = first
        .record
        .lease
        .clone()
        .expect("a running job has a lease");
    assert_eq!(
        (held.worker.as_str(), held.expires_at),
        ("checker", at(5_000))
    );
    assert!(b
        .progress(ProgressParams {
            lease: lease_a,
            progress: 30
        })
        .await
        .unwrap());
    assert_eq!(record(&b, id).await.progress, 30);

    assert!(b
        .rescue(RescueParams {
            now: at(4_000),
            limit: 10
        })
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        b.rescue(RescueParams {
            now: at(6_000),
            limit: 10
        })
        .await
        .unwrap(),
        vec![id]
    );
    let rescued = record(&b, id).await;
    assert_eq!((rescued.status, rescued.attempt), (JobStatus::Pending, 1));
    assert!(
        rescued.errors[0].message.contains("lease expired"),
        "{:?}",
        rescued.errors
    );

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
    assert!(!b
        .progress(ProgressParams {
            lease: lease_a,
            progress: 90
        })
        .await
        .unwrap());
    let renew = RenewParams {
        items: vec![lease_a],
        expires_at: at(20_000),
        now: at(6_100),
    };
    assert_eq!(b.renew(renew).await.unwrap(), vec![false]);
    let release = ReleaseParams {
        items: vec![lease_a],
        now: at(6_100),
    };
    assert_eq!(b.release(release).await.unwrap(), vec![false]);
    let current = record(&b, id).await;
    assert_eq!(
        (current.status, current.lease.map(|l| l.token)),
        (JobStatus::Running, Some(second.token))
    );

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
        !complete(&b, &second, "2", at(6_300)).await,
        "a job completes once"
    );
}

/// Fetches racing on many connections never hand one job to two of them.
pub async fn concurrent_fetches_never_share_a_job(b: AnyBackend) {
    let jobs: Vec<NewJob> = (0..200).map(|_| new_job("raced")).collect();
    let ids: HashSet<JobId> = jobs.iter().map(|j| j.id).collect();
    b.enqueue(EnqueueParams { jobs, now: t0() }).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let b = b.clone();
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let got = fetch(&b, 7, t0()).await;
                if got.is_empty() {
                    return mine;
                }
                mine.extend(got.into_iter().map(|j| j.record.id));
            }
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    let unique: HashSet<JobId> = all.iter().copied().collect();
    assert_eq!(all.len(), 200, "every job fetched exactly once");
    assert_eq!(unique, ids);
    assert_eq!(counts(&b).await.running, 200);
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
    assert!(b
        .rescue(RescueParams {
            now: at(7_000),
            limit: 10
        })
        .await
        .unwrap()
        .is_empty());
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

/// A failure goes back to pending at retry_at; the last goes dead; every error is kept.
pub async fn failures_retry_then_die_with_every_error(b: AnyBackend) {
    let mut job = new_job("failing");
    job.max_attempts = 2;
    let id = put(&b, job).await;
    let first = fetch_one(&b, t0()).await;
    assert!(fail(&b, &first, "boom 1", Some(at(10_000)), at(100)).await);
    let r = record(&b, id).await;
    assert_eq!(
        (r.status, r.run_at, r.attempt, r.lease.is_none()),
        (JobStatus::Pending, at(10_000), 1, true)
    );
    assert_eq!(
        r.errors,
        vec![AttemptError {
            attempt: 1,
            message: "boom 1".into(),
            at: at(100)
        }]
    );

    assert!(
        fetch(&b, 5, at(9_999)).await.is_empty(),
        "not before retry_at"
    );
    let second = fetch_one(&b, at(10_000)).await;
    assert_eq!(second.record.attempt, 2);
    assert!(fail(&b, &second, "boom 2", None, at(10_100)).await);
    let dead = record(&b, id).await;
    assert_eq!(
        (dead.status, dead.finished_at),
        (JobStatus::Dead, Some(at(10_100)))
    );
    let attempts: Vec<(u32, &str)> = dead
        .errors
        .iter()
        .map(|e| (e.attempt, e.message.as_str()))
        .collect();
    assert_eq!(attempts, vec![(1, "boom 1"), (2, "boom 2")]);
    let listed = b
        .list(ListParams {
            queue: Some(QUEUE.into()),
            status: Some(JobStatus::Dead),
            after: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(listed.iter().map(|r| r.id).collect::<Vec<_>>(), vec![id]);
    assert_eq!(counts(&b).await.dead, 1);
}

/// A released job is pending again with its attempt not counted.
pub async fn release_does_not_spend_an_attempt(b: AnyBackend) {
    let id = put(&b, new_job("released")).await;
    let got = fetch_one(&b, t0()).await;
    let params = ReleaseParams {
        items: vec![got.lease()],
        now: at(100),
    };
    assert_eq!(b.release(params).await.unwrap(), vec![true]);
    let r = record(&b, id).await;
    assert_eq!(
        (r.status, r.attempt, r.lease.is_none()),
        (JobStatus::Pending, 0, true)
    );
    assert_eq!(fetch_one(&b, at(200)).await.record.attempt, 1);
}

/// A dead job can be retried by hand with fresh attempts, and deleted.
pub async fn dead_jobs_retry_and_delete(b: AnyBackend) {
    let mut job = new_job("revived");
    job.max_attempts = 1;
    let id = put(&b, job).await;
    let got = fetch_one(&b, t0()).await;
    assert!(fail(&b, &got, "fatal", None, at(10)).await);
    assert!(!b
        .retry(RetryParams {
            id: JobId::new(),
            now: at(20)
        })
        .await
        .unwrap());
    assert!(b.retry(RetryParams { id, now: at(1_000) }).await.unwrap());
    let r = record(&b, id).await;
    assert_eq!(
        (r.status, r.attempt, r.run_at, r.finished_at),
        (JobStatus::Pending, 0, at(1_000), None)
    );
    assert_eq!(r.errors.len(), 1, "the history is kept");
    assert!(
        !b.retry(RetryParams { id, now: at(1_000) }).await.unwrap(),
        "only dead or cancelled"
    );
    assert_eq!(fetch_one(&b, at(1_000)).await.record.attempt, 1);

    assert!(b.delete(DeleteParams { id }).await.unwrap());
    assert!(b.job(id).await.unwrap().is_none());
    assert!(!b.delete(DeleteParams { id }).await.unwrap());
    assert_eq!(counts(&b).await, QueueCounts::default());
}

/// Cancelling stops a pending job from running and revokes a running job's lease.
pub async fn cancel_pending_and_running(b: AnyBackend) {
    let pending = put(&b, new_job("cancelled")).await;
    assert!(b
        .cancel(CancelParams {
            id: pending,
            now: at(5)
        })
        .await
        .unwrap());
    let r = record(&b, pending).await;
    assert_eq!(
        (r.status, r.finished_at),
        (JobStatus::Cancelled, Some(at(5)))
    );
    assert!(!b
        .cancel(CancelParams {
            id: pending,
            now: at(6)
        })
        .await
        .unwrap());
    assert!(fetch(&b, 5, at(10)).await.is_empty());

    let running = put(&b, new_job("cancelled")).await;
    let got = fetch_one(&b, at(10)).await;
    assert!(b
        .cancel(CancelParams {
            id: running,
            now: at(20)
        })
        .await
        .unwrap());
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
    assert_eq!(record(&b, running).await.status, JobStatus::Cancelled);
    assert_eq!(counts(&b).await.cancelled, 2);

    assert!(b
        .retry(RetryParams {
            id: pending,
            now: at(40)
        })
        .await
        .unwrap());
    assert_eq!(fetch_one(&b, at(40)).await.record.id, pending);
}

/// A unique key held by an active job of the queue returns that job instead of a new one.
pub async fn unique_keys_dedupe_active_jobs(b: AnyBackend) {
    let keyed = |key: &str, queue: &str| {
        let mut job = new_job("unique");
        job.unique_key = Some(key.to_string());
        job.queue = queue.to_string();
        job
    };
    let first = keyed("user:1", QUEUE);
    let in_batch = keyed("user:1", QUEUE);
    let elsewhere = keyed("user:1", "conformance-other");
    let stored = b
        .enqueue(EnqueueParams {
            jobs: vec![first.clone(), in_batch, elsewhere.clone()],
            now: t0(),
        })
        .await
        .unwrap();
    assert_eq!(
        stored,
        vec![
            Enqueued {
                id: first.id,
                duplicate: false
            },
            Enqueued {
                id: first.id,
                duplicate: true
            },
            Enqueued {
                id: elsewhere.id,
                duplicate: false
            },
        ]
    );
    let again = b
        .enqueue(EnqueueParams {
            jobs: vec![keyed("user:1", QUEUE)],
            now: at(1),
        })
        .await
        .unwrap();
    assert_eq!(
        again,
        vec![Enqueued {
            id: first.id,
            duplicate: true
        }]
    );
    assert_eq!(counts(&b).await.pending, 1, "duplicates store nothing");

    let running = fetch_one(&b, at(2)).await;
    let while_running = put_at(&b, keyed("user:1", QUEUE), at(3)).await;
    assert_eq!(while_running, first.id, "held while running");
    assert!(complete(&b, &running, "null", at(4)).await);
    let after = put_at(&b, keyed("user:1", QUEUE), at(5)).await;
    assert_ne!(after, first.id, "released once the job finished");

    let mut dying = keyed("user:2", QUEUE);
    dying.max_attempts = 1;
    dying.priority = -5;
    let dying_id = put_at(&b, dying, at(6)).await;
    let got = fetch_one(&b, at(7)).await;
    assert_eq!(got.record.id, dying_id);
    assert!(fail(&b, &got, "no", None, at(8)).await);
    let replacement = put_at(&b, keyed("user:2", QUEUE), at(9)).await;
    assert_ne!(replacement, dying_id, "dead jobs hold no key");
    let refused = b
        .retry(RetryParams {
            id: dying_id,
            now: at(10),
        })
        .await;
    assert!(
        matches!(refused, Err(Error::Invalid(_))),
        "retry while the key is held: {refused:?}"
    );
    assert_eq!(record(&b, dying_id).await.status, JobStatus::Dead);
}

/// A cron tick is stored once however often it is enqueued; earlier ticks are refused.
pub async fn cron_tick_stored_once(b: AnyBackend) {
    let tick = |ms: i64| {
        let mut job = new_job("cron.job");
        job.run_at = at(ms);
        job.unique_key = Some(format!("cron:cron.job:{ms}"));
        CronTickParams {
            schedule: "cron.job".into(),
            tick: at(ms),
            job,
            now: at(ms),
        }
    };
    let first = b
        .enqueue_cron(tick(1_000))
        .await
        .unwrap()
        .expect("first tick stored");
    assert_eq!(record(&b, first).await.run_at, at(1_000));
    assert_eq!(b.enqueue_cron(tick(1_000)).await.unwrap(), None);
    assert_eq!(b.enqueue_cron(tick(0)).await.unwrap(), None);
    let mut racers = Vec::new();
    for _ in 0..4 {
        let b = b.clone();
        let params = tick(2_000);
        racers.push(tokio::spawn(async move {
            b.enqueue_cron(params).await.unwrap()
        }));
    }
    let mut stored = 0;
    for racer in racers {
        stored += racer.await.unwrap().is_some() as u32;
    }
    assert_eq!(stored, 1, "one of four racing workers stores the tick");
    assert_eq!(counts(&b).await.pending, 2);
}

/// A lapsed lease with no attempts left sends the job to dead, with the reason.
pub async fn rescue_without_attempts_left_is_dead(b: AnyBackend) {
    let mut job = new_job("lost");
    job.max_attempts = 1;
    let id = put(&b, job).await;
    let mut params = fetch_params(1, t0());
    params.lease_for = Duration::from_secs(1);
    assert_eq!(b.fetch(params).await.unwrap().len(), 1);
    assert_eq!(
        b.rescue(RescueParams {
            now: at(2_000),
            limit: 10
        })
        .await
        .unwrap(),
        vec![id]
    );
    let r = record(&b, id).await;
    assert_eq!((r.status, r.lease.is_none()), (JobStatus::Dead, true));
    assert!(
        r.errors[0].message.contains("lease expired"),
        "{:?}",
        r.errors
    );
    assert!(b
        .rescue(RescueParams {
            now: at(3_000),
            limit: 10
        })
        .await
        .unwrap()
        .is_empty());
}

/// Listing filters by queue and status and pages by id.
pub async fn list_pages_by_queue_and_status(b: AnyBackend) {
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(put(&b, new_job("listed")).await);
    }
    let mut other = new_job("listed");
    other.queue = "conformance-other".into();
    put(&b, other).await;
    let page = |after, limit| ListParams {
        queue: Some(QUEUE.into()),
        status: None,
        after,
        limit,
    };
    let first = b.list(page(None, 2)).await.unwrap();
    let second = b.list(page(Some(first[1].id), 2)).await.unwrap();
    let third = b.list(page(Some(second[1].id), 2)).await.unwrap();
    let pages: Vec<Vec<JobId>> = [first, second, third]
        .iter()
        .map(|p| p.iter().map(|r| r.id).collect())
        .collect();
    assert_eq!(
        pages,
        vec![ids[0..2].to_vec(), ids[2..4].to_vec(), ids[4..5].to_vec()]
    );
    let all_pending = ListParams {
        queue: None,
        status: Some(JobStatus::Pending),
        after: None,
        limit: 100,
    };
    assert_eq!(b.list(all_pending).await.unwrap().len(), 6);
    let none_running = ListParams {
        status: Some(JobStatus::Running),
        ..page(None, 100)
    };
    assert!(b.list(none_running).await.unwrap().is_empty());
}

/// Pruning keeps the newest finished jobs by count and age, never touches dead ones, and
/// removes at most `limit` per call.
pub async fn prune_keeps_by_count_and_age(b: AnyBackend) {
    let mut finished = Vec::new();
    for i in 1..=5 {
        let id = put(&b, new_job("pruned")).await;
        let got = fetch_one(&b, at(i)).await;
        assert!(complete(&b, &got, "null", at(i * 1_000)).await);
        finished.push(id);
    }
    let mut doomed = new_job("pruned");
    doomed.max_attempts = 1;
    let dead = put(&b, doomed).await;
    let got = fetch_one(&b, at(5_500)).await;
    assert!(fail(&b, &got, "x", None, at(5_600)).await);
    let cancelled = put(&b, new_job("pruned")).await;
    assert!(b
        .cancel(CancelParams {
            id: cancelled,
            now: at(6_000)
        })
        .await
        .unwrap());

    let prune = |keep_count, finished_before, limit| PruneParams {
        queue: QUEUE.into(),
        keep_count,
        finished_before,
        limit,
    };
    assert_eq!(
        b.prune(prune(Some(2), None, 1)).await.unwrap(),
        1,
        "limit respected"
    );
    assert_eq!(b.prune(prune(Some(2), None, 100)).await.unwrap(), 3);
    assert!(b.job(finished[3]).await.unwrap().is_none());
    assert!(b.job(finished[4]).await.unwrap().is_some());
    assert_eq!(b.prune(prune(None, Some(at(5_500)), 100)).await.unwrap(), 1);
    assert!(b.job(finished[4]).await.unwrap().is_none());
    assert!(b.job(cancelled).await.unwrap().is_some());
    assert!(
        b.job(dead).await.unwrap().is_some(),
        "dead jobs stay until deleted"
    );
    let c = counts(&b).await;
    assert_eq!((c.completed, c.cancelled, c.dead), (0, 1, 1));
    assert_eq!(b.prune(prune(Some(0), None, 100)).await.unwrap(), 1);
    assert_eq!(b.prune(prune(Some(0), None, 100)).await.unwrap(), 0);
}

/// Hundreds of jobs go in, out and to completed in one call each.
pub async fn batches_enqueue_fetch_and_complete(b: AnyBackend) {
    let jobs: Vec<NewJob> = (0..300).map(|_| new_job("batched")).collect();
    let stored = b
        .enqueue(EnqueueParams {
            jobs: jobs.clone(),
            now: t0(),
        })
        .await
        .unwrap();
    assert_eq!(
        stored.iter().map(|e| e.id).collect::<Vec<_>>(),
        jobs.iter().map(|j| j.id).collect::<Vec<_>>()
    );
    let got = fetch(&b, 300, t0()).await;
    assert_eq!(got.len(), 300);
    let items = got
        .iter()
        .map(|j| Completion {
            lease: j.lease(),
            result: json(&j.record.id.to_string().len().to_string()),
        })
        .collect();
    let accepted = b
        .complete(CompleteParams { items, now: at(1) })
        .await
        .unwrap();
    assert_eq!(accepted, vec![true; 300]);
    let c = counts(&b).await;
    assert_eq!((c.completed, c.running, c.pending), (300, 0, 0));
    assert_eq!(
        value(record(&b, jobs[7].id).await.result.as_ref().unwrap()),
        serde_json::json!(36)
    );
}
