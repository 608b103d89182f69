//! W8, operations at scale: with 1,000,000 completed and 10,000 dead jobs retained (`--retained`
//! sets the completed), the per-queue counts (`Backend::counts`, what `jobs stats` and
//! `Operations::queues` ask for each queue) and the first page of the dead jobs
//! (`Operations::jobs`), 200 calls each, one after the other, each timed alone.

use std::future::Future;
use std::time::{Duration, Instant};

use jobs::{AnyBackend, JobFilter, JobStatus, Operations, PageRequest};
use jobs_core::{Backend as _, CountsParams, DEFAULT_PAGE_SIZE};

use crate::backends::{self, fresh_backend, BackendKind};
use crate::{percentiles, print, Line};

/// Dead jobs retained beside the completed ones.
const DEAD: u64 = 10_000;
/// Timed calls per measure.
const CALLS: u64 = 200;

/// W8: seeds the store, checks what it holds, then times each call.
pub(crate) async fn w8(kind: BackendKind, retained: u64) {
    let backend = fresh_backend(kind).await;
    backends::retain_finished(kind, &backend, retained).await;
    backends::retain_dead(kind, &backend, DEAD).await;
    let held = counts(&backend).await;
    assert_eq!(
        (held.completed, held.dead),
        (retained, DEAD),
        "the seeded jobs"
    );
    let dead = JobFilter::new().queue("email").status(JobStatus::Dead);
    let first_page = || async {
        let page = backend
            .jobs(&dead, PageRequest::default())
            .await
            .expect("a page of dead jobs");
        assert_eq!(page.jobs.len(), DEFAULT_PAGE_SIZE, "a full first page");
    };
    let seeded = format!("{retained} completed and {DEAD} dead jobs retained");
    let measures = [
        (
            format!("Backend::counts of queue email, {CALLS} calls; {seeded}"),
            time(|| async {
                counts(&backend).await;
            })
            .await,
        ),
        (
            format!(
                "Operations::jobs, first page ({DEFAULT_PAGE_SIZE}) of queue email's dead jobs, {CALLS} calls; {seeded}"
            ),
            time(first_page).await,
        ),
    ];
    for (notes, latencies) in measures {
        let line = Line {
            workload: "W8",
            n: CALLS,
            concurrency: 1,
            jobs_per_s: None,
            latency_ms: Some(percentiles(latencies)),
            notes,
        };
        print(kind, line);
    }
}

async fn counts(backend: &AnyBackend) -> jobs_core::QueueCounts {
    backend
        .counts(CountsParams {
            queue: "email".into(),
        })
        .await
        .expect("counts")
}

/// The latency of each of [`CALLS`] calls, after one untimed call.
async fn time<F: Future<Output = ()>>(call: impl Fn() -> F) -> Vec<Duration> {
    call().await;
    let mut took = Vec::with_capacity(CALLS as usize);
    for _ in 0..CALLS {
        let started = Instant::now();
        call().await;
        took.push(started.elapsed());
    }
    took
}
