//! Flow limits across four worker processes: the jobs running at once never exceed a queue's
//! concurrency, and the starts within any window never exceed its rate.

use std::time::SystemTime;

use super::*;

/// The most spans that overlap at any instant.
fn deepest_overlap(spans: &[(u128, u128)]) -> usize {
    // Ends sort before starts at the same instant: a job that ended as another started did
    // not run beside it.
    let mut edges: Vec<(u128, i8)> = spans
        .iter()
        .flat_map(|&(start, end)| [(start, 1), (end, -1)])
        .collect();
    edges.sort_unstable();
    let (mut depth, mut deepest) = (0i64, 0i64);
    for (_, step) in edges {
        depth += i64::from(step);
        deepest = deepest.max(depth);
    }
    deepest as usize
}

/// The most of the sorted `starts` within any interval shorter than `window`.
fn busiest_window(starts: &[Timestamp], window: chrono::Duration) -> usize {
    starts
        .iter()
        .enumerate()
        .map(|(i, first)| {
            starts[i..]
                .iter()
                .take_while(|s| **s - *first < window)
                .count()
        })
        .max()
        .unwrap_or(0)
}

/// Four worker processes of 16 slots each: with the queue limited to 5 at once, the handlers'
/// own spans never overlap more than 5 deep, and reach it; then, limited to 40 starts per
/// 500 ms instead, no window holds more than 40 of the starts the store recorded, and the jobs
/// start as soon as the windows allow.
pub fn flow_limits_hold_across_processes(connect: impl Connect, child_test: &str) {
    const N: u64 = 200;
    const CONCURRENCY: u32 = 5;
    const RATE: u32 = 40;
    on_fresh_store(connect, async |store, backend| {
        let capped = QueueLimits::default().concurrency(CONCURRENCY);
        backend
            .set_queue_limits(QUEUE, capped)
            .await
            .expect("limits");
        let processes: Vec<Process> = (0..4)
            .map(|_| Process::spawn(child_test, &store, 5_000))
            .collect();
        enqueue_tallies(&backend, N, 20).await;
        let (within, every) = (Duration::from_secs(60), Duration::from_millis(20));
        poll_until("the capped jobs completed", within, every, || async {
            counts(&backend).await.completed == N
        })
        .await;
        let capped_until = SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_micros();

        let period = Duration::from_millis(500);
        let rated = QueueLimits::default().rate(Rate::new(RATE, period));
        backend
            .set_queue_limits(QUEUE, rated)
            .await
            .expect("limits");
        // Every process reads the new limits within a second.
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        let jobs = (N..2 * N).map(|n| Tally {
            n,
            stall: false,
            ms: 0,
        });
        let handles = Tally::enqueue_many(&backend, jobs).await.expect("enqueue");
        poll_until("the rated jobs completed", within, every, || async {
            counts(&backend).await.completed == 2 * N
        })
        .await;

        let mut spans = Vec::new();
        for process in processes {
            spans.extend(process.stop_with_spans().1);
        }
        let capped: Vec<(u128, u128)> = spans
            .into_iter()
            .filter(|(start, _)| *start < capped_until)
            .collect();
        assert_eq!(capped.len(), N as usize, "a span per capped job");
        let deepest = deepest_overlap(&capped);

        let mut starts = Vec::with_capacity(handles.len());
        for handle in &handles {
            let r = handle.record(&backend).await.expect("record");
            assert_eq!(r.attempt, 1, "a job held back spends no attempt");
            starts.push(r.started_at.expect("started"));
        }
        starts.sort_unstable();
        // The store's own start times, less a little for fetchers that read the clock in one
        // order and reached the store in the other.
        let window = chrono::Duration::milliseconds(480);
        let busiest = busiest_window(&starts, window);
        let spread = starts[starts.len() - 1] - starts[0];
        println!(
            "flow across 4 processes: at most {deepest} of {N} jobs running at once (limit \
             {CONCURRENCY}); at most {busiest} starts in any 480 ms (limit {RATE} per 500 ms), \
             {} starts over {} ms",
            starts.len(),
            spread.num_milliseconds()
        );
        assert_eq!(deepest, CONCURRENCY as usize, "running at once");
        assert!(busiest <= RATE as usize, "{busiest} starts in one window");
        let windows = (N as u32).div_ceil(RATE) - 1;
        let least = chrono::Duration::milliseconds(i64::from(windows) * 500 - 100);
        assert!(spread >= least, "the rate spread the starts over {spread}");
        assert!(
            spread < least + chrono::Duration::milliseconds(1_500),
            "the jobs waited longer than the rate asks: {spread}"
        );
    });
}
