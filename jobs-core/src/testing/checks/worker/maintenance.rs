//! The worker's timers besides running jobs: retention and cron ticks.

use std::time::Duration;

use crate::testing::jobs::*;
use crate::testing::support::*;
use crate::*;

/// The worker prunes completed jobs beyond its queue's retention.
pub async fn worker_prunes_by_retention(b: AnyBackend) {
    let w = worker(&b)
        .register::<Echo>()
        .retention(QUEUE, Retention::count(2))
        .prune_interval(Duration::from_millis(20))
        .concurrency(1)
        .prefetch(0);
    let running = Running::start(w);
    let handles = Echo::enqueue_many(&b, (0..6).map(|n| Echo { n }))
        .await
        .unwrap();
    let counts = || {
        let b = b.clone();
        async move {
            b.counts(CountsParams {
                queue: QUEUE.into(),
            })
            .await
            .unwrap()
        }
    };
    eventually("all ran and only two are kept", || async {
        let c = counts().await;
        c.completed == 2 && c.pending == 0 && c.running == 0
    })
    .await;
    // One at a time, so the last two enqueued finished last.
    for newest in &handles[4..] {
        assert!(newest.record(&b).await.is_ok(), "the newest are kept");
    }
    running.stop().await.unwrap();
}

/// Two workers schedule the same cron job; each tick is enqueued once, on a whole second.
pub async fn worker_cron_enqueues_each_tick_once_across_workers(b: AnyBackend) {
    let cron_worker = |id: &str| worker(&b).id(id).register::<Ticker>().cron(true);
    let one = Running::start(cron_worker("one"));
    let two = Running::start(cron_worker("two"));
    let completed = JobFilter::new().queue(QUEUE).status(JobStatus::Completed);
    eventually("two ticks ran", || async {
        let page = b.jobs(&completed, PageRequest::default()).await.unwrap();
        page.jobs.len() >= 2
    })
    .await;
    one.stop().await.unwrap();
    two.stop().await.unwrap();
    let every = JobFilter::new().queue(QUEUE);
    let jobs = b.jobs(&every, PageRequest::default()).await.unwrap().jobs;
    let mut ticks: Vec<Timestamp> = jobs.iter().map(|r| r.run_at).collect();
    ticks.sort();
    let count = ticks.len();
    ticks.dedup();
    assert_eq!(ticks.len(), count, "a tick was enqueued twice: {ticks:?}");
    assert!(
        ticks.iter().all(|t| t.timestamp_subsec_millis() == 0),
        "ticks fall on whole seconds"
    );
    assert!(jobs.iter().all(|r| &*r.name == Ticker::NAME));
}
