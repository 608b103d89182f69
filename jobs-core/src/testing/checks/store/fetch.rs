//! Fetching: which ready jobs come out, in what order, and never to two callers.

use std::collections::HashSet;

use super::*;

/// Ready jobs come out by priority, then run_at, then FIFO, across the fetched queues.
pub async fn fetch_by_priority_then_run_at_then_fifo(b: AnyBackend) {
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
    other.queue = OTHER_QUEUE.into();
    other.priority = 6;
    other.run_at = at(-10_000);
    let other_id = put(&b, other).await;

    let mut order = Vec::new();
    for _ in 0..6 {
        let params = fetch_params(&[QUEUE, OTHER_QUEUE], 1, t0());
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
pub async fn fetch_waits_for_run_at(b: AnyBackend) {
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

/// Fetches racing on many connections never hand one job to two of them.
pub async fn fetch_racing_never_hands_out_a_job_twice(b: AnyBackend) {
    let jobs = (0..200).map(|_| new_job("raced"));
    let ids: HashSet<JobId> = put_many(&b, jobs, t0()).await.into_iter().collect();
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

/// A fetch naming job names takes only jobs of those names, in order, across queues; the
/// others stay pending in their place, no attempt spent, for a fetch that names them.
pub async fn fetch_takes_only_the_names_given(b: AnyBackend) {
    let mut ids = Vec::new();
    for (name, queue, offset) in [
        ("new.step", QUEUE, -5_000),
        ("old.step", QUEUE, -4_000),
        ("new.step", OTHER_QUEUE, -3_000),
        ("old.step", OTHER_QUEUE, -2_000),
        ("old.step", QUEUE, -1_000),
    ] {
        let mut job = new_job(name);
        job.queue = queue.into();
        job.run_at = at(offset);
        ids.push(put(&b, job).await);
    }
    let names = |n: &[&str]| {
        let known = n.iter().map(|s| KnownJob {
            name: s.to_string(),
            version: 1,
        });
        Some(known.collect())
    };

    // An older worker: one job at a time, across both queues, so a multi-queue fetch that
    // looks at each queue's head first must look past the jobs it cannot run.
    let mut old = Vec::new();
    for _ in 0..3 {
        let mut params = fetch_params(&[QUEUE, OTHER_QUEUE], 1, t0());
        params.known = names(&["old.step"]);
        let got = b.fetch(params).await.expect("fetch");
        assert_eq!(got.len(), 1, "an old job is ready");
        old.push(got[0].record.id);
    }
    assert_eq!(old, vec![ids[1], ids[3], ids[4]]);
    let mut params = fetch_params(&[QUEUE, OTHER_QUEUE], 10, t0());
    params.known = names(&["old.step", "unheard.of"]);
    assert!(
        b.fetch(params).await.expect("fetch").is_empty(),
        "only jobs of other names are left"
    );
    for &id in &[ids[0], ids[2]] {
        let r = read(&b, id).await.expect("stored");
        assert_eq!(
            (r.status, r.attempt, r.errors.len()),
            (JobStatus::Pending, 0, 0),
            "a job of a name not asked for is untouched"
        );
    }

    // A newer worker takes them, each on its first attempt, still in run order.
    let mut params = fetch_params(&[QUEUE, OTHER_QUEUE], 10, t0());
    params.known = names(&["new.step", "old.step"]);
    let got = b.fetch(params).await.expect("fetch");
    let taken: Vec<(JobId, u32)> = got
        .iter()
        .map(|j| (j.record.id, j.record.attempt))
        .collect();
    assert_eq!(taken, vec![(ids[0], 1), (ids[2], 1)]);
}
