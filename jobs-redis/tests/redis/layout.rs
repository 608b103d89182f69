//! Checks of this backend's own layout beyond the conformance suite: big batches split over
//! script calls, lists that filter across chunks, counts through promotion, writes that span
//! queues, and queue names with braces.

use std::time::Duration;

use jobs_core::{
    Backend, CompleteParams, Completion, CountsParams, EnqueueParams, FetchParams, JobId,
    JobStatus, LeasedJob, ListParams, NewJob, PruneParams, Timestamp,
};
use serde_json::value::RawValue;

use crate::support::{job, single_backend, t0};

fn at(ms: i64) -> Timestamp {
    t0() + chrono::Duration::milliseconds(ms)
}

fn fetch(queues: &[&str], limit: usize, now: Timestamp) -> FetchParams {
    FetchParams {
        queues: queues.iter().map(|q| q.to_string()).collect(),
        limit,
        worker: "layout".into(),
        lease_for: Duration::from_secs(30),
        now,
    }
}

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
    let jobs: Vec<NewJob> = (0..1_200).map(|_| job("big", t0())).collect();
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
    let leased = b.fetch(fetch(&["big"], 1_200, t0())).await.unwrap();
    assert_eq!(leased.len(), 1_200);
    let accepted = complete(&b, &leased, "null", at(1)).await;
    assert!(accepted.iter().all(|ok| *ok));

    let pending = b
        .list(ListParams {
            queue: Some("big".into()),
            status: Some(JobStatus::Pending),
            after: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(
        pending.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![last.id],
        "found past 1,200 completed jobs"
    );
    let page = b
        .list(ListParams {
            queue: None,
            status: None,
            after: Some(ids[599]),
            limit: 700,
        })
        .await
        .unwrap();
    assert_eq!(page.len(), 601);
    assert_eq!(page[0].id, ids[600]);

    let pruned = b
        .prune(PruneParams {
            queue: "big".into(),
            keep_count: Some(0),
            finished_before: None,
            limit: 5_000,
        })
        .await
        .unwrap();
    assert_eq!(pruned, 1_200);
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
    let r = b.job(jobs[2].id).await.unwrap().unwrap();
    assert_eq!(
        (r.queue.as_str(), r.status),
        (queues[1], JobStatus::Completed)
    );
}
