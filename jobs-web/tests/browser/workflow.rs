//! A person follows a workflow: its page shows each step, follows them as they run without a
//! reload, and links to each step's job, whose page links back.

use std::time::Duration;

use jobs_core::{Backend, CompleteParams, Completion, FetchParams, JobError, Workflow};
use jobs_macros::job;
use serde_json::json;

use crate::app::{App, FULL};
use crate::chrome::Browser;
use crate::store::Kind;

/// The queue of the workflow's steps, which no worker runs: the test completes them.
const QUEUE: &str = "flow";

/// Packs an order: its parcels.
#[job(crate = "jobs_core", queue = "flow", name = "flow.pack")]
async fn pack(order: u64) -> Result<u64, JobError> {
    Ok(order)
}

/// Posts the parcels: a tracking number.
#[job(crate = "jobs_core", queue = "flow", name = "flow.post")]
async fn post(parcels: u64) -> Result<String, JobError> {
    Ok(format!("track-{parcels}"))
}

pub(crate) async fn follow_a_workflow(kind: Kind) {
    let app = App::start(kind).await;
    let backend = &app.store.backend;
    let handle = Workflow::start(Pack::new(2))
        .then::<Post>()
        .enqueue(backend)
        .await
        .expect("the workflow is stored");
    let id = handle.id();
    let stored = handle.status(backend).await.unwrap().expect("stored");
    let (pack, post) = (stored.steps[0].job.id, stored.steps[1].job.id);
    let browser = Browser::start(&app.origin, kind.name()).await;

    browser.open(&format!("{FULL}/workflows/{id}")).await;
    browser.wait_page("workflow").await;
    assert_eq!(browser.text("#workflow-state").await, "running");
    let status_of = |job| format!(r#"table#steps tr[data-job="{job}"] td.status"#);
    assert_eq!(browser.text(&status_of(pack)).await, "pending");
    assert_eq!(browser.text(&status_of(post)).await, "waiting");
    browser.script("window.notReloaded = true;", vec![]).await;

    // The first step completes (through the store): the page follows, without a reload.
    let now = chrono::Utc::now();
    let leased = backend
        .fetch(FetchParams {
            ended: Vec::new(),
            queues: vec![QUEUE.into()],
            limit: 10,
            worker: "browser-test".into(),
            lease_for: Duration::from_secs(60),
            now,
            known: None,
            flow: Vec::new(),
            reserve: 0,
            deliver: 0,
        })
        .await
        .expect("fetch");
    assert_eq!(leased.len(), 1, "only the first step is ready");
    assert_eq!(leased[0].record.id, pack);
    let result = serde_json::value::to_raw_value(&2).unwrap();
    let done = backend
        .complete(CompleteParams {
            items: vec![Completion {
                lease: leased[0].lease(),
                result,
            }],
            now: chrono::Utc::now(),
        })
        .await
        .expect("complete");
    assert_eq!(done, [true]);
    browser.wait_text(&status_of(pack), "completed").await;
    browser.wait_text(&status_of(post), "pending").await;
    assert_eq!(browser.text("#workflow-state").await, "running");
    assert_eq!(
        browser
            .script("return window.notReloaded === true;", vec![])
            .await,
        json!(true),
        "the steps changed without a reload"
    );
    browser.assert_no_alert().await;
    browser.screenshot("workflow").await;

    // A step's job page links back to its workflow.
    browser
        .click(&format!(r#"tr[data-job="{post}"] a.job-link"#))
        .await;
    browser.wait_page("job").await;
    assert_eq!(browser.text("#job-status").await, "pending");
    assert!(browser.text("#job-workflow").await.ends_with(", stage 1"));
    browser.click("#job-workflow a").await;
    browser.wait_page("workflow").await;
    browser.wait_path(&format!("/workflows/{id}")).await;

    browser.close().await;
    app.stop().await;
}
