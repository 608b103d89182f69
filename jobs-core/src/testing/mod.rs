//! The backend conformance suite: every guarantee of the job model, checked against any backend.
//!
//! A backend crate runs the whole suite from one of its tests with [`conformance!`](crate::conformance):
//!
//! ```ignore
//! async fn fresh_backend() -> MyBackend { MyBackend::connect_isolated().await }
//! mod conformance {
//!     jobs_core::conformance!(super::fresh_backend);
//! }
//! ```
//!
//! Each check is its own `#[test]` on a fresh backend (its own schema or key prefix), so the
//! checks run in parallel. Checks that depend on time pass it explicitly (backend checks) or use
//! a [`ManualClock`](crate::ManualClock), so none sleeps for real seconds.

pub mod checks;
mod jobs;
pub mod processes;
mod support;

use std::future::Future;
use std::time::Duration;

use crate::{AnyBackend, Backend, BoxFuture};

pub use jobs::{Counter, Echo};

/// Runs one check on a fresh backend from `make`, on its own runtime, with a 60 s limit.
pub fn run<B, F, Fut>(make: F, check: fn(AnyBackend) -> BoxFuture<()>)
where
    B: Backend,
    F: FnOnce() -> Fut,
    Fut: Future<Output = B>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let backend = AnyBackend::new(make().await);
        tokio::time::timeout(Duration::from_secs(60), check(backend))
            .await
            .expect("the check did not finish within 60 s");
    });
}

/// Expands to one `#[test]` per guarantee, each on a fresh backend from `$make` (a path to an
/// `async fn() -> impl Backend`). Invoke it inside a module of its own.
#[macro_export]
macro_rules! conformance {
    ($make:path) => {
        $crate::conformance!(@each $make;
            enqueue_and_read,
            priority_then_run_at_then_fifo,
            delayed_jobs_wait_for_run_at,
            stale_lease_is_fenced,
            concurrent_fetches_never_share_a_job,
            renew_extends_only_live_leases,
            failures_retry_then_die_with_every_error,
            release_does_not_spend_an_attempt,
            dead_jobs_retry_and_delete,
            cancel_pending_and_running,
            unique_keys_dedupe_active_jobs,
            cron_tick_stored_once,
            rescue_without_attempts_left_is_dead,
            list_pages_by_queue_and_status,
            prune_keeps_by_count_and_age,
            batches_enqueue_fetch_and_complete,
            worker_runs_jobs_and_returns_typed_results,
            worker_retries_follow_backoff,
            worker_dead_after_max_attempts,
            worker_fatal_error_goes_dead_at_once,
            worker_survives_a_panicking_handler,
            worker_fails_undeserializable_payload,
            worker_times_out_slow_attempts,
            worker_reruns_jobs_of_a_dead_worker,
            workers_never_run_a_job_twice,
            worker_shutdown_finishes_within_grace,
            worker_shutdown_hands_back_unfinished_jobs,
            worker_stops_a_cancelled_job,
            worker_prunes_by_retention,
            cron_enqueued_once_per_tick_across_workers,
            worker_refuses_to_start_without_state,
        );
    };
    (@each $make:path; $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                $crate::testing::run($make, |backend| {
                    ::std::boxed::Box::pin($crate::testing::checks::$check(backend))
                });
            }
        )*
    };
}
