//! The dashboard in a real browser: headless Chromium (`/usr/bin/chromium`, driven through
//! `/usr/bin/chromedriver` over WebDriver; `JOBS_TEST_CHROMIUM` and `JOBS_TEST_CHROMEDRIVER`
//! override the paths) on the dashboard nested under a prefix, served over HTTP with a real
//! worker, on PostgreSQL and on Redis.
//!
//! Each test has its own store (a schema, a key prefix), server, worker, chromedriver and
//! browser, so they run in parallel; every wait gives up after [`chrome::DEADLINE`], a whole
//! scenario after [`chrome::SCENARIO`]. The pages' screenshots are saved under
//! `target/screenshots/` (`{store}-{page}.png`, `{store}-read-only-{page}.png`).

#[path = "browser/app.rs"]
mod app;
#[path = "browser/chrome.rs"]
mod chrome;
#[path = "browser/fix.rs"]
mod fix;
#[path = "browser/read_only.rs"]
mod read_only;
#[path = "browser/store.rs"]
mod store;
#[path = "browser/workflow.rs"]
mod workflow;

/// Runs `scenario`, failing the test if it takes longer than [`chrome::SCENARIO`] (its browser
/// is killed as it is dropped).
async fn within_deadline(scenario: impl std::future::Future<Output = ()>) {
    tokio::time::timeout(chrome::SCENARIO, scenario)
        .await
        .unwrap_or_else(|_| panic!("the scenario did not finish within {:?}", chrome::SCENARIO));
}

/// One test per store for the scenario `module::name` (an `async fn(Kind)`).
macro_rules! on_both_stores {
    ($($module:ident::$name:ident),* $(,)?) => {
        $(mod $name {
            use crate::store::Kind;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                crate::within_deadline(crate::$module::$name(Kind::Postgres)).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                crate::within_deadline(crate::$module::$name(Kind::Redis)).await
            }
        })*
    };
}

on_both_stores!(
    fix::fix_dead_jobs,
    read_only::read_only_refuses,
    workflow::follow_a_workflow
);
