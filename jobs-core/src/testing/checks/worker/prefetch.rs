//! How many jobs a worker leases ahead of those running: by default as many as it runs, more
//! while its handlers outrun the fetches, and no more while they are slower.

use std::collections::HashMap;
use std::time::Duration;

use crate::testing::jobs::*;
use crate::testing::support::*;
use crate::*;

/// The most jobs of `QUEUE` named `name` that one fetch leased: a fetch starts every job it
/// leases at its own `now`, so the jobs that share a start time came in one fetch.
async fn largest_fetch(b: &AnyBackend, name: &str) -> usize {
    let (mut per_start, mut after) = (HashMap::<Timestamp, usize>::new(), None);
    loop {
        let page = b
            .list(ListParams {
                filter: JobFilter::new().queue(QUEUE).name(name),
                after,
                limit: 500,
            })
            .await
            .expect("list");
        for r in &page {
            *per_start.entry(r.started_at.expect("started")).or_default() += 1;
        }
        match page.last() {
            Some(last) => after = Some(last.id),
            None => return per_start.into_values().max().unwrap_or(0),
        }
    }
}

/// With the default prefetch, a worker of two whose jobs take a while leases at most two
/// running and two ahead at once; once its jobs end at once, it leases more ahead while the
/// backlog lasts, and no more than the two again once it is drained (a fetch came back short)
/// and slow jobs follow. Each job runs once.
pub async fn worker_leases_ahead_by_how_fast_its_jobs_end(b: AnyBackend) {
    let (overlap, counter) = (Overlap::default(), Counter::default());
    let running = Running::start(
        worker(&b)
            .concurrency(2)
            .register::<Overlaps>()
            .register::<Counted>()
            .register::<Echo>()
            .state(overlap.clone())
            .state(counter.clone()),
    );
    let slow_ones = || async {
        // Slower than a fetch on a loaded machine: handlers that outrun the fetches would
        // rightly lease more ahead.
        let slow = (0..16).map(|_| Overlaps {
            ms: 100,
            commit_ms: 0,
        });
        for handle in Overlaps::enqueue_many(&b, slow).await.expect("enqueue") {
            assert_eq!(handle.wait(&b).await.expect("completed"), 1);
        }
    };
    slow_ones().await;
    let quick = Counted::enqueue_many(&b, (0..3_000).map(|_| Counted { ms: 0 }))
        .await
        .expect("enqueue");
    let every = (16 + quick.len()) as u64;
    let drained = || async { counts(&b).await.completed == every };
    poll_until(
        "every job completed",
        Duration::from_secs(60),
        Duration::from_millis(10),
        drained,
    )
    .await;
    // One job alone: the fetch that leases it comes back short of the slots it asked for (or
    // an empty fetch came before it), so the slow jobs find the window back at its least. Slow
    // jobs enqueued while the window is still as wide as the backlog made it may all be leased
    // by the next fetch: the window shrinks at the first fetch that comes back short.
    let alone = Echo { n: 0 }.enqueue(&b).await.expect("enqueue");
    alone.wait(&b).await.expect("completed");
    slow_ones().await;
    running.stop().await.expect("worker");
    assert_eq!(overlap.max(), 2);
    let slow = largest_fetch(&b, Overlaps::NAME).await;
    assert!(slow <= 4, "slow jobs: {slow} leased in one fetch");
    let quick_fetch = largest_fetch(&b, Counted::NAME).await;
    assert!(
        quick_fetch > 4,
        "quick jobs: at most {quick_fetch} in one fetch"
    );
    let runs = counter.runs();
    assert_eq!(runs.len(), quick.len());
    assert!(quick.iter().all(|h| runs.get(&h.id()) == Some(&1)));
}
