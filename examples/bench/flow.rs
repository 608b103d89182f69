//! W6: what flow limits cost (W2 under a global concurrency limit of 16, W6a, and under a rate
//! limit above the achievable rate, W6b); W7: how closely a rate limit of 1,000 starts/s holds
//! with four worker processes, per one-second window.

use std::sync::Arc;
use std::time::Duration;

use clap::ArgMatches;
use jobs::{
    AnyBackend, JobFilter, JobStatus, Operations, PageRequest, QueueLimits, Rate, Retention,
};
use tokio::sync::Notify;

use crate::backends::{fresh_backend, BackendKind};
use crate::{
    drain, enqueue_bulk, median, print, run_worker_until, spawn_workers, start_workers,
    stop_workers, wait_all_completed, worker, Line, Probe,
};

/// W6a's concurrency limit.
const CAPPED: u32 = 16;
/// W6b's rate: far above what any backend drains here.
const UNREACHED: Rate = Rate::new(10_000_000, Duration::from_secs(1));
/// W7's rate, per second.
const RATE: u32 = 1_000;

/// W6a and W6b: W2 on a limited queue, with the ratio to plain W2. Each of `rounds` rounds
/// drains a plain queue and the limited one back to back (in turns, which first), each on a
/// fresh store, so that each ratio compares two drains a few seconds apart (this machine's speed drifts by more
/// than the cost measured over a run); the line gives the median rate and the median ratio.
///
/// A global limit of 16 leaves a worker of concurrency 16 no room to prefetch within the limit
/// (a prefetched job holds a lease, and the store counts leases), where W2's worker leases jobs
/// ahead that keep its handlers busy while it fetches; a backend that reserves leases beyond the
/// limit prefetches all the same. So W6a's rounds also drain a plain queue with prefetch 0, and
/// its line gives the ratio to that too: what the limit itself costs.
pub(crate) async fn w6(kind: BackendKind, n: u64, concurrency: usize, rounds: usize) {
    let cases = [
        (
            "W6a",
            QueueLimits::default().concurrency(CAPPED),
            "a global concurrency limit of 16 on the queue",
        ),
        (
            "W6b",
            QueueLimits::default().rate(UNREACHED),
            "a rate limit of 10,000,000 starts/s on the queue (sliding window)",
        ),
    ];
    for (workload, limits, what) in cases {
        let capped = limits.concurrency.is_some();
        let (mut rates, mut ratios, mut unprefetched) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            // Which drain goes first alternates, so that a drift within a round favours
            // neither.
            let drain_plain = |prefetch| drained(kind, n, concurrency, prefetch, None);
            let drain_limited = || drained(kind, n, concurrency, None, Some(limits));
            let (plain, limited) = if round % 2 == 0 {
                let plain = drain_plain(None).await;
                (plain, drain_limited().await)
            } else {
                let limited = drain_limited().await;
                (drain_plain(None).await, limited)
            };
            rates.push(limited);
            ratios.push(limited / plain);
            if capped {
                unprefetched.push(limited / drain_plain(Some(0)).await);
            }
        }
        let listed: Vec<String> = ratios.iter().map(|r| format!("{r:.3}")).collect();
        let mut notes = format!(
            "W2 with {what}; {workload}/W2 = {:.3}, the median of {rounds} rounds of a plain W2 \
             and {workload} back to back ({})",
            median(&mut ratios),
            listed.join(", ")
        );
        if capped {
            notes += &format!(
                "; {workload}/W2 without prefetch (the leases the limit allows) = {:.3}",
                median(&mut unprefetched)
            );
        }
        let line = Line {
            workload,
            n,
            concurrency,
            jobs_per_s: Some(median(&mut rates)),
            latency_ms: None,
            notes,
        };
        print(kind, line);
    }
}

/// W2's drain rate on a fresh store (a worker of `concurrency` leasing up to `prefetch` more,
/// `None`: the worker's default), its queue under `limits` if any.
async fn drained(
    kind: BackendKind,
    n: u64,
    concurrency: usize,
    prefetch: Option<usize>,
    limits: Option<QueueLimits>,
) -> f64 {
    let backend = fresh_backend(kind).await;
    if let Some(limits) = limits {
        limit(&backend, limits).await;
    }
    enqueue_bulk(&backend, n).await;
    drain(&backend, n, concurrency, prefetch, Retention::default()).await
}

/// W7: a backlog drained under 1,000 starts/s by four workers (processes where the store is
/// shared) for `n / 2,000` seconds (2 to 10; 10 at the protocol's N); the starts the store
/// recorded, counted per second from the first.
pub(crate) async fn w7(kind: BackendKind, n: u64, concurrency: usize, args: &ArgMatches) {
    const WORKERS: usize = 4;
    let seconds = (n / 2_000).clamp(2, 10);
    let backend = fresh_backend(kind).await;
    limit(
        &backend,
        QueueLimits::default().rate(Rate::new(RATE, Duration::from_secs(1))),
    )
    .await;
    // A backlog throughout the measured seconds, and a little beyond.
    let jobs = u64::from(RATE) * seconds + u64::from(RATE) / 2;
    enqueue_bulk(&backend, jobs).await;
    let started = std::time::Instant::now();
    let how = if kind.shared_across_processes() {
        let mut children = spawn_workers(args, WORKERS, concurrency);
        start_workers(&mut children);
        wait_all_completed(&backend, jobs, started).await;
        stop_workers(children);
        "4 worker processes"
    } else {
        let stops: Vec<_> = (0..WORKERS)
            .map(|_| {
                let stop = Arc::new(Notify::new());
                let w = worker(&backend, concurrency, Arc::new(Probe::default()))
                    .default_retention(Retention::all());
                (stop.clone(), tokio::spawn(run_worker_until(w, stop)))
            })
            .collect();
        wait_all_completed(&backend, jobs, started).await;
        for (stop, task) in stops {
            stop.notify_one();
            task.await.expect("worker task");
        }
        "4 workers in one process (the memory backend lives in one process)"
    };
    let mut per_second = starts_per_second(&backend, seconds).await;
    per_second.sort_unstable();
    let (min, max) = (per_second[0], per_second[per_second.len() - 1]);
    let median = per_second[per_second.len() / 2];
    let off = |s: u64| (s as f64 - f64::from(RATE)).abs() / f64::from(RATE);
    let worst = off(min).max(off(max));
    let notes = format!(
        "a rate limit of {RATE} starts/s, {how} of concurrency {concurrency}, {seconds} s of backlog; \
         starts per 1 s window from the first start (store's start times): min {min}, median \
         {median}, max {max}; worst {:.1} % off the limit ({})",
        worst * 100.0,
        if worst <= 0.05 { "within ±5 %" } else { "NOT within ±5 %" }
    );
    let line = Line {
        workload: "W7",
        n: jobs,
        concurrency: concurrency * WORKERS,
        jobs_per_s: Some(median as f64),
        latency_ms: None,
        notes,
    };
    print(kind, line);
}

/// Sets the bench queue's limits.
async fn limit(backend: &AnyBackend, limits: QueueLimits) {
    backend
        .set_queue_limits("email", limits)
        .await
        .expect("set the queue's limits");
}

/// How many of the completed jobs started in each of the first `seconds` whole seconds after
/// the first start.
async fn starts_per_second(backend: &AnyBackend, seconds: u64) -> Vec<u64> {
    let filter = JobFilter::default()
        .queue("email")
        .status(JobStatus::Completed);
    let mut starts = Vec::new();
    let mut page = PageRequest {
        after: None,
        limit: 1_000,
    };
    loop {
        let got = backend.jobs(&filter, page).await.expect("list");
        starts.extend(got.jobs.iter().filter_map(|r| r.started_at));
        match got.next {
            Some(next) => page.after = Some(next),
            None => break,
        }
    }
    let first = *starts.iter().min().expect("jobs started");
    let mut windows = vec![0u64; seconds as usize];
    for start in starts {
        let second = (start - first).num_milliseconds() / 1_000;
        if let Some(window) = usize::try_from(second)
            .ok()
            .and_then(|s| windows.get_mut(s))
        {
            *window += 1;
        }
    }
    windows
}
