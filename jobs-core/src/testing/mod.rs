//! The backend conformance suite: every guarantee of the job model, checked against any backend.
//!
//! A backend crate runs the whole suite from one of its tests with
//! [`conformance!`](crate::conformance):
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
//! a [`ManualClock`](crate::ManualClock), so none sleeps for real seconds. The checks are listed
//! once, in the table of [`checks`]; each is named for the operation it exercises first, so
//! `cargo test list_` runs the list checks.

pub mod checks;
pub mod deliveries;
mod jobs;
pub mod poison;
pub mod processes;
/// A server killed and restarted mid-run: no acknowledged enqueue is lost, the worker resumes.
pub mod restart;
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
///
/// The tests are the rows of the suite's table of checks, named for the operation they
/// exercise first, so `cargo test fetch_` runs the fetch checks and `cargo test worker_` those
/// of the worker.
#[macro_export]
macro_rules! conformance {
    ($make:path) => {
        $crate::__conformance_checks!([$crate::conformance] @tests $make;);
    };
    (@tests $make:path; $($($module:ident)::+ { $($check:ident),* $(,)? })*) => {
        $crate::conformance_only!($make; $($($check,)*)*);
    };
}

/// Expands to one `#[test]` for each check of the suite it names, on a fresh backend from
/// `$make`, as [`conformance!`] does for all of them: for a backend being built, whose checks
/// are listed as it comes to pass them (the Redis layout on streams). A name that is not a
/// check of the suite does not compile.
///
/// ```ignore
/// mod streams {
///     jobs_core::conformance_only!(crate::support::streams_backend;
///         enqueue_batches_of_hundreds_fetched_and_completed_in_one_call,
///         fetch_racing_never_hands_out_a_job_twice,
///     );
/// }
/// ```
#[macro_export]
macro_rules! conformance_only {
    ($make:path; $($check:ident),* $(,)?) => {
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
