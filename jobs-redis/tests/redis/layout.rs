//! Checks of this backend's own layout beyond the conformance suite: big batches split over
//! script calls, lists that filter across scan calls, running jobs listed by id from a set
//! ordered by expiry, errors stored before kinds were kept, counts through promotion, writes
//! that span queues, queue names with braces, and batches mixing plain jobs with others.

use std::time::Duration;

use jobs_core::{
    Backend, CompleteParams, Completion, CountsParams, EnqueueParams, ErrorKind, ErrorReport,
    FailParams, Failure, JobFilter, JobId, JobStatus, LeasedJob, ListParams, NewJob, Operations,
    PruneParams, Timestamp,
};
use jobs_redis::redis;
use serde_json::value::RawValue;

use crate::support::{at, fetch, job, raw_connection, single_backend, t0};

/// Completes every job of `leased` with `result`; whether each completion was accepted.
async fn complete(
    b: &impl Backend,
    leased: &[LeasedJob],
    result: &str,
    now: Timestamp,
) -> Vec<bool> {
    let items = leased
        .iter()
        .map(|j| Completion {
            lease: j.lease(),
            result: RawValue::from_string(result.into()).unwrap(),
        })
        .collect();
    b.complete(CompleteParams { items, now }).await.unwrap()
}

async fn counts(b: &impl Backend, queue: &str) -> jobs_core::QueueCounts {
    b.counts(CountsParams {
        queue: queue.into(),
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_batches_complete_lists_filter_and_prunes_chunk() {
    let b = single_backend().await;
    // More than one scan call examines (2,000), more than one enqueue call stores (500).
    let jobs: Vec<NewJob> = (0..2_500).map(|_| job("big", t0())).collect();
    let stored = b
        .enqueue(EnqueueParams {
            jobs: jobs.clone(),
            now: t0(),
        })
        .await
        .unwrap();
    let ids: Vec<JobId> = stored.iter().map(|e| e.id).collect();
    assert_eq!(ids, jobs.iter().map(|j| j.id).collect::<Vec<_>>());

    let last = job("big", t0());
    b.enqueue(EnqueueParams {
        jobs: vec![last.clone()],
        now: t0(),
    })
    .await
    .unwrap();
    let leased = b.fetch(fetch(&["big"], 2_500, t0())).await.unwrap();
    assert_eq!(leased.len(), 2_500);
    let accepted = complete(&b, &leased, "null", at(1)).await;
    assert!(accepted.iter().all(|ok| *ok));

    let pending = b
        .list(ListParams {
            filter: JobFilter::new().queue("big").status(JobStatus::Pending),
            after: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(
        pending.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![last.id],
        "found past 2,500 completed jobs"
    );
    let page = b
        .list(ListParams {
            filter: JobFilter::new(),
            after: Some(ids[599]),
            limit: 700,
        })
        .await
        .unwrap();
    assert_eq!(page.len(), 700);
    assert_eq!(page[0].id, ids[600]);

    let pruned = b
        .prune(PruneParams {
            queue: "big".into(),
            keep_count: Some(0),
            finished_before: None,
            limit: 5_000,
            now: at(2),
        })
        .await
        .unwrap();
    assert_eq!(pruned, 2_500);
    let c = counts(&b, "big").await;
    assert_eq!((c.completed, c.pending), (0, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_follow_promotion_and_writes_span_queues() {
    let b = single_backend().await;
    let queues = ["a}b", "{c"];
    let jobs = vec![
        job(queues[0], at(1_000)),
        job(queues[0], at(2_000)),
        job(queues[1], at(1_500)),
    ];
    b.enqueue(EnqueueParams {
        jobs: jobs.clone(),
        now: t0(),
    })
    .await
    .unwrap();
    assert_eq!(counts(&b, queues[0]).await.scheduled, 2);

    let got = b.fetch(fetch(&queues, 2, at(5_000))).await.unwrap();
    let got_ids: Vec<JobId> = got.iter().map(|j| j.record.id).collect();
    assert_eq!(
        got_ids,
        vec![jobs[0].id, jobs[2].id],
        "run_at order across queues"
    );
    let a = counts(&b, queues[0]).await;
    assert_eq!(
        (a.scheduled, a.pending, a.running),
        (0, 1, 1),
        "a due job left behind is pending"
    );

    let accepted = complete(&b, &got, "1", at(5_001)).await;
    assert_eq!(accepted, vec![true, true], "one batch, two queues' slots");
    for (queue, completed) in [(queues[0], 1), (queues[1], 1)] {
        assert_eq!(counts(&b, queue).await.completed, completed);
    }
    let r = b.job(jobs[2].id).await.unwrap();
    assert_eq!((&*r.queue, r.status), (queues[1], JobStatus::Completed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_jobs_list_by_id_whatever_their_lease_expiry() {
    let b = single_backend().await;
    let jobs: Vec<NewJob> = ["r1", "r2", "r1"]
        .iter()
        .enumerate()
        .map(|(i, queue)| NewJob {
            // The last enqueued runs first, so the leases expire in the reverse of id order.
            priority: 3 - i as i16,
            ..job(queue, t0())
        })
        .collect();
    b.enqueue(EnqueueParams {
        jobs: jobs.clone(),
        now: t0(),
    })
    .await
    .unwrap();
    b.enqueue(EnqueueParams {
        jobs: vec![job("r1", t0())],
        now: t0(),
    })
    .await
    .unwrap();
    for (n, queue) in [(2, "r1"), (1, "r2"), (0, "r1")] {
        let mut p = fetch(&[queue], 1, at(n));
        p.lease_for = Duration::from_secs(30 - n as u64);
        assert_eq!(b.fetch(p).await.unwrap()[0].record.id, jobs[n as usize].id);
    }
    let running = |after| ListParams {
        filter: JobFilter::new().status(JobStatus::Running),
        after,
        limit: 2,
    };
    let first: Vec<JobId> = b
        .list(running(None))
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(first, [jobs[0].id, jobs[1].id]);
    let rest: Vec<JobId> = b
        .list(running(Some(first[1])))
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(rest, [jobs[2].id]);
}

/// Errors are stored as JSON with their kind and chain; those stored before kinds were kept
/// (`attempt:at:message`) still read back, as retryable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_keep_their_kind_and_old_ones_read_as_retryable() {
    let b = single_backend().await;
    let stored = job("e", t0());
    b.enqueue(EnqueueParams {
        jobs: vec![stored.clone()],
        now: t0(),
    })
    .await
    .unwrap();
    let leased = b.fetch(fetch(&["e"], 1, t0())).await.unwrap();
    let report = ErrorReport {
        kind: ErrorKind::Timeout,
        message: "took too long: 5 s".into(),
        chain: vec!["5 s".into()],
    };
    let failure = Failure {
        lease: leased[0].lease(),
        error: report.clone(),
        retry_at: Some(at(1)),
    };
    let failed = b
        .fail(FailParams {
            items: vec![failure],
            now: at(1),
        })
        .await
        .unwrap();
    assert_eq!(failed, [true]);

    let mut conn = raw_connection().await;
    let errors = format!("{{{}:e}}:e:{}", b.key_prefix(), stored.id.0.simple());
    let raw: Vec<String> = redis::cmd("LRANGE")
        .arg(&errors)
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&raw[0]).unwrap();
    assert_eq!(json["kind"], "timeout");
    assert_eq!(json["chain"][0], "5 s");
    // An attempt recorded by an older release.
    let old = format!("7:{}:disk: full", t0().timestamp_micros());
    let _: i64 = redis::cmd("LPUSH")
        .arg(&errors)
        .arg(old)
        .query_async(&mut conn)
        .await
        .unwrap();

    let record = b.job(stored.id).await.unwrap();
    assert_eq!(record.errors.len(), 2);
    let (old, new) = (&record.errors[0], &record.errors[1]);
    assert_eq!(
        (old.attempt, old.at, old.kind),
        (7, t0(), ErrorKind::Retryable)
    );
    assert_eq!((old.message.as_str(), old.chain.len()), ("disk: full", 0));
    assert_eq!(
        (new.attempt, new.at, new.kind),
        (1, at(1), ErrorKind::Timeout)
    );
    assert_eq!((&new.message, &new.chain), (&report.message, &report.chain));
}

/// A batch mixing plain jobs (stored without the lookups of the others) with a tagged job, a
/// unique one, a scheduled one and a repeated id stores each as it would alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_mixing_plain_and_other_jobs_stores_each_as_alone() {
    let b = single_backend().await;
    let plain = job("mix", t0());
    let tagged = NewJob {
        tags: vec!["vip".into()],
        ..job("mix", t0())
    };
    let unique = NewJob {
        unique_key: Some("user:7".into()),
        ..job("mix", t0())
    };
    let later = job("mix", at(60_000));
    let repeated = plain.clone();
    let taken_key = NewJob {
        unique_key: Some("user:7".into()),
        ..job("mix", t0())
    };
    let batch = vec![
        plain.clone(),
        tagged.clone(),
        unique.clone(),
        later.clone(),
        repeated,
        taken_key,
    ];
    let stored = b
        .enqueue(EnqueueParams {
            jobs: batch,
            now: t0(),
        })
        .await
        .unwrap();
    let ids: Vec<(JobId, bool)> = stored.iter().map(|e| (e.id, e.duplicate)).collect();
    assert_eq!(
        ids,
        [
            (plain.id, false),
            (tagged.id, false),
            (unique.id, false),
            (later.id, false),
            (plain.id, false),
            (unique.id, true),
        ]
    );
    let c = counts(&b, "mix").await;
    assert_eq!((c.pending, c.scheduled), (3, 1));
    let vip = b
        .list(ListParams {
            filter: JobFilter::new().queue("mix").tag("vip"),
            after: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(vip.iter().map(|r| r.id).collect::<Vec<_>>(), [tagged.id]);
    assert_eq!(b.job(later.id).await.unwrap().status, JobStatus::Scheduled);
    let leased = b.fetch(fetch(&["mix"], 10, at(1))).await.unwrap();
    let order: Vec<JobId> = leased.iter().map(|j| j.record.id).collect();
    assert_eq!(order, [plain.id, tagged.id, unique.id]);
}
