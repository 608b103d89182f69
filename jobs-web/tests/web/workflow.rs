//! The workflow page and `api/workflows/{id}`, the waiting counts of the overview and the job
//! list, and a step's job page linking to its workflow: an order workflow (reserve, then
//! charge, then ship; a release undoes the reservation) stored through `Workflow`, its steps
//! completed and failed through the store.

use axum::http::StatusCode;
use jobs_core::{AnyBackend, JobError, JobId, Workflow, WorkflowId};
use jobs_macros::job;
use serde_json::json;

use crate::support::{complete_all, kill_all, on_every_store, Web, SCRIPT};

on_every_store!(a_workflow_shows_its_steps, unknown_and_malformed_workflows);

/// Reserves stock for an order: its units.
#[job(crate = "jobs_core", queue = "web_stock", name = "order.reserve")]
async fn reserve(order: u64) -> Result<u64, JobError> {
    Ok(order)
}

/// Charges for the reserved units.
#[job(
    crate = "jobs_core",
    queue = "web_pay",
    name = "order.charge",
    attempts = 2
)]
async fn charge(units: u64) -> Result<String, JobError> {
    Ok(units.to_string())
}

/// Ships the order once charged.
#[job(crate = "jobs_core", queue = "web_pay", name = "order.ship")]
async fn ship(receipt: String) -> Result<(), JobError> {
    let _ = receipt;
    Ok(())
}

/// Releases the reserved units (the compensation of `reserve`).
#[job(crate = "jobs_core", queue = "web_pay", name = "order.release")]
async fn release(units: u64) -> Result<(), JobError> {
    let _ = units;
    Ok(())
}

async fn a_workflow_shows_its_steps(b: AnyBackend) {
    let handle = Workflow::start(Reserve::new(3))
        .compensate::<Release>()
        .then::<Charge>()
        .then::<Ship>()
        .enqueue(&b)
        .await
        .expect("the workflow is stored");
    let id = handle.id();
    let status = handle.status(&b).await.unwrap().expect("stored");
    let ids: Vec<JobId> = status.steps.iter().map(|s| s.job.id).collect();
    let web = Web::new(&b);

    // The overview counts the waiting steps, first, and links to them.
    let page = web.get("").await;
    assert!(
        page.body
            .contains(r#"<th class="num">waiting</th><th class="num">pending</th>"#),
        "waiting is the first counted column"
    );
    let cell = |page: &crate::support::Reply, queue: &str, count: &str| {
        page.text_after(
            &format!(r#"data-queue="{queue}""#),
            &format!(r#"data-count="{count}""#),
        )
    };
    assert_eq!(cell(&page, "web_pay", "waiting"), "3");
    assert_eq!(cell(&page, "web_stock", "waiting"), "0");
    assert_eq!(cell(&page, "web_stock", "pending"), "1");
    assert!(page
        .body
        .contains(r#"<a href="jobs?queue=web_pay&amp;status=waiting">3</a>"#));
    let api = web.get("api/queues").await.json();
    let pay = api
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "web_pay")
        .expect("listed")
        .clone();
    assert_eq!(pay["counts"]["waiting"], 3);

    // The list filters by waiting, and its form offers it.
    let list = web.get("jobs?status=waiting").await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.count("<tr data-job="), 3);
    for job in &ids[1..] {
        assert!(list.body.contains(&format!(r#"<tr data-job="{job}""#)));
    }
    assert!(list.body.contains(r#"<option value="waiting">"#));

    // Stored: running, the first step pending and the others waiting.
    let page = web.get(&format!("workflows/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains(r#"data-page="workflow""#));
    assert!(page.body.contains(&format!(r#"data-workflow="{id}""#)));
    assert!(page
        .body
        .contains(r#"<span id="workflow-state" class="badge state-running">running</span>"#));
    assert_eq!(page.count("<tr data-job="), 4);
    let row = |page: &crate::support::Reply, job: JobId, class: &str| {
        page.text_after(
            &format!(r#"<tr data-job="{job}""#),
            &format!(r#"class="{class}""#),
        )
    };
    let expected = [
        ("stage 0", "order.reserve", "pending"),
        ("stage 1", "order.charge", "waiting"),
        ("stage 2", "order.ship", "waiting"),
        ("undo 0", "order.release", "waiting"),
    ];
    for (job, (stage, name, status)) in ids.iter().zip(expected) {
        assert_eq!(row(&page, *job, "stage"), stage);
        assert_eq!(row(&page, *job, "name"), name);
        assert_eq!(row(&page, *job, "status"), status);
        assert!(page.body.contains(&format!(
            r#"<a class="job-link mono" href="jobs/{job}">{name}</a>"#
        )));
    }
    assert_eq!(row(&page, ids[1], "num attempt"), "0/2");

    // The first step completes, the second ends dead with markup in its error: the release
    // runs, the shipping is cancelled.
    assert_eq!(complete_all(&b, "web_stock").await, [ids[0]]);
    let error = format!("card declined {SCRIPT}");
    assert_eq!(kill_all(&b, "web_pay", &error).await, [ids[1]]);
    let page = web.get(&format!("workflows/{id}")).await;
    assert!(page.body.contains(
        r#"<span id="workflow-state" class="badge state-compensating">compensating</span>"#
    ));
    assert_eq!(row(&page, ids[0], "status"), "completed");
    assert_eq!(row(&page, ids[0], "result"), r#"{&quot;sent&quot;:true}"#);
    assert_eq!(row(&page, ids[1], "status"), "dead");
    assert_eq!(row(&page, ids[1], "num attempt"), "1/2");
    assert_eq!(
        row(&page, ids[1], "error-preview"),
        "card declined &lt;script&gt;alert(1)&lt;/script&gt;"
    );
    assert!(!page.body.contains(SCRIPT), "the error is escaped");
    assert_eq!(row(&page, ids[2], "status"), "cancelled");
    assert_eq!(row(&page, ids[3], "status"), "pending");

    let api = web.get(&format!("api/workflows/{id}")).await;
    assert_eq!(api.status, StatusCode::OK);
    assert!(api.content_type.starts_with("application/json"));
    let api = api.json();
    assert_eq!(api["id"], id.to_string());
    assert_eq!(api["state"], "compensating");
    let statuses: Vec<&str> = api["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["job"]["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["completed", "dead", "cancelled", "pending"]);
    assert_eq!(
        api["steps"][3]["role"],
        json!({"role": "compensation", "stage": 0})
    );
    assert_eq!(api["steps"][1]["job"]["errors"][0]["message"], error);

    // A step's job page links to its workflow.
    let page = web.get(&format!("jobs/{}", ids[1])).await;
    assert!(page.body.contains(&format!(
        r#"<dd id="job-workflow"><a class="mono" href="workflows/{id}">{id}</a>, stage 1</dd>"#
    )));
    let page = web.get(&format!("jobs/{}", ids[3])).await;
    assert!(page.body.contains(&format!(r#"href="workflows/{id}""#)));
    assert!(page.body.contains(", undo 0</dd>"));

    // The release completes: the workflow failed.
    assert_eq!(complete_all(&b, "web_pay").await, [ids[3]]);
    let api = web.get(&format!("api/workflows/{id}")).await.json();
    assert_eq!(api["state"], "failed");
    let page = web.get(&format!("workflows/{id}")).await;
    assert!(page
        .body
        .contains(r#"class="badge state-failed">failed</span>"#));
}

async fn unknown_and_malformed_workflows(b: AnyBackend) {
    let web = Web::new(&b);
    let unknown = WorkflowId::new();
    let api = web.get(&format!("api/workflows/{unknown}")).await;
    assert_eq!(api.status, StatusCode::NOT_FOUND);
    assert_eq!(api.json()["error"], format!("workflow {unknown} not found"));
    let page = web.get(&format!("workflows/{unknown}")).await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    assert!(page.body.contains(&format!("workflow {unknown} not found")));

    // An ordinary job's id is no workflow's, and its page names none.
    let job = crate::support::put_n(&b, "email", 1).await[0];
    let api = web.get(&format!("api/workflows/{job}")).await;
    assert_eq!(api.status, StatusCode::NOT_FOUND);
    assert!(!web
        .get(&format!("jobs/{job}"))
        .await
        .body
        .contains("job-workflow"));

    let api = web.get("api/workflows/order-42").await;
    assert_eq!(api.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        api.json()["error"],
        "`order-42` is not a workflow id (a UUID)"
    );
    let page = web.get("workflows/%3Cb%3Eorder").await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(page.body.contains("`&lt;b&gt;order` is not a workflow id"));
}
