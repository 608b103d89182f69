//! A person fixes failing jobs: sees them on the overview, finds them in the dead list, reads
//! the error (a `<script>` shown as text), retries one and watches it complete, then retries
//! all the others at once; the workers and schedules pages show the worker and its cron job;
//! a job of the type the worker published is enqueued by hand from its type page.

use serde_json::json;

use crate::app::{App, Phase, ERROR, FULL, QUEUE};
use crate::chrome::Browser;
use crate::store::Kind;

/// The overview's cell of `status` in the queue's row.
fn count_cell(status: &str) -> String {
    format!(r#"tr[data-queue="{QUEUE}"] td[data-count="{status}"]"#)
}

/// The ids of the listed jobs, in the list's order.
async fn listed(browser: &Browser) -> Vec<String> {
    let mut ids = Vec::new();
    for row in browser.all("table#jobs tr[data-job]").await {
        ids.push(row.attr("data-job").await.unwrap().unwrap_or_default());
    }
    ids
}

pub(crate) async fn fix_dead_jobs(kind: Kind) {
    let app = App::start(kind).await;
    let ada = app.deliver("ada@example.com", "vip").await.to_string();
    let bob = app.deliver("bob@example.com", "vip").await.to_string();
    let cy = app.deliver("cy@example.com", "bulk").await.to_string();
    app.wait_counts("3 dead", |c| c.dead == 3).await;
    let browser = Browser::start(&app.origin, kind.name()).await;

    // The overview: the queue's counts.
    browser.open(FULL).await;
    browser.wait_page("overview").await;
    for (status, n) in [
        ("waiting", "0"),
        ("pending", "0"),
        ("scheduled", "0"),
        ("running", "0"),
        ("completed", "0"),
        ("dead", "3"),
        ("cancelled", "0"),
    ] {
        browser.wait_text(&count_cell(status), n).await;
    }
    let row = format!(r#"tr[data-queue="{QUEUE}"]"#);
    assert_eq!(browser.text(&format!("{row} td.paused")).await, "no");
    assert_eq!(browser.all(&format!("{row} button.pause")).await.len(), 1);
    browser.screenshot("overview").await;

    // The jobs list, filtered to the queue through its form.
    browser.open(&format!("{FULL}/jobs")).await;
    browser.wait_page("jobs").await;
    browser
        .fill(r#"form#filters input[name="queue"]"#, QUEUE)
        .await;
    browser.click("button#apply").await;
    browser.wait_page("jobs").await;
    browser.wait_path("queue=mail").await;
    let mut all = listed(&browser).await;
    all.sort();
    let mut expected = vec![ada.clone(), bob.clone(), cy.clone()];
    expected.sort();
    assert_eq!(all, expected);
    for cell in browser.all("table#jobs tr[data-job] td.status").await {
        assert_eq!(cell.text().await.unwrap().trim(), "dead");
    }
    browser.screenshot("jobs").await;

    // The dead list, from the overview's dead count, filtered by tag.
    browser.click("a#nav-overview").await;
    browser.click(&format!("{} a", count_cell("dead"))).await;
    browser.wait_page("dead").await;
    assert_eq!(listed(&browser).await.len(), 3);
    browser
        .fill(r#"form#filters input[name="tag"]"#, "vip")
        .await;
    browser.click("button#apply").await;
    browser.wait_page("dead").await;
    browser.wait_path("tag=vip").await;
    let mut vips = listed(&browser).await;
    vips.sort();
    let mut expected = vec![ada.clone(), bob.clone()];
    expected.sort();
    assert_eq!(vips, expected, "the dead jobs tagged vip");
    browser.screenshot("dead").await;

    // A dead job: its errors as text; no script ran.
    browser
        .click(&format!(r#"tr[data-job="{ada}"] a.job-link"#))
        .await;
    browser.wait_page("job").await;
    assert_eq!(browser.text("#job-status").await, "dead");
    assert!(browser
        .text("pre#job-payload")
        .await
        .contains("ada@example.com"));
    let kinds = browser.all("table#attempts td.error-kind").await;
    let messages = browser.all("table#attempts td.error-message").await;
    assert_eq!((kinds.len(), messages.len()), (2, 2), "two failed attempts");
    for (kind, message) in kinds.iter().zip(&messages) {
        assert_eq!(kind.text().await.unwrap().trim(), "retryable");
        assert_eq!(message.text().await.unwrap().trim(), ERROR);
    }
    let scripts = browser
        .script(
            "return document.querySelectorAll('main script, td.error-message script').length;",
            vec![],
        )
        .await;
    assert_eq!(scripts, json!(0), "the error is text, not an element");
    browser.assert_no_alert().await;
    browser.screenshot("job").await;

    // Retry it: it runs, then completes, on this page, without a reload.
    app.outage.set(Phase::Held);
    browser.click("button#retry").await;
    browser.wait_page("job").await;
    assert!(
        browser
            .text("#notice")
            .await
            .to_lowercase()
            .contains("retried"),
        "a notice of the retry"
    );
    browser.script("window.notReloaded = true;", vec![]).await;
    browser.wait_text("#job-status", "running").await;
    app.outage.set(Phase::Working);
    browser.wait_text("#job-status", "completed").await;
    assert_eq!(
        browser
            .script("return window.notReloaded === true;", vec![])
            .await,
        json!(true),
        "the status changed without a reload"
    );
    browser
        .wait_text("pre#job-result", "\"delivered to ada@example.com\"")
        .await;
    browser.assert_no_alert().await;
    browser.screenshot("job-completed").await;

    // Retry all the others from the dead list, after a confirmation that counts them.
    browser.click("a#nav-dead").await;
    browser.wait_page("dead").await;
    let mut rest = listed(&browser).await;
    rest.sort();
    let mut expected = vec![bob.clone(), cy.clone()];
    expected.sort();
    assert_eq!(rest, expected);
    browser.click("button#retry-all").await;
    browser.wait_page("confirm").await;
    assert_eq!(browser.text("#confirm-count").await, "2");
    browser.screenshot("confirm").await;
    app.outage.set(Phase::Held);
    browser.click("button#confirm").await;
    browser.wait_page("dead").await;
    assert!(
        browser.text("#notice").await.contains('2'),
        "the notice counts 2"
    );
    app.wait_counts("2 running", |c| c.running == 2 && c.dead == 0)
        .await;

    // The worker, running both.
    browser.click("a#nav-workers").await;
    browser.wait_page("workers").await;
    let worker = format!(r#"table#workers tr[data-worker="{}"]"#, app.worker_id);
    browser
        .reload_until_count(&format!("{worker} a.job-link"), 2)
        .await;
    let mut running = Vec::new();
    for link in browser.all(&format!("{worker} a.job-link")).await {
        running.push(link.text().await.unwrap().trim().to_string());
    }
    running.sort();
    assert_eq!(running, expected, "the worker runs the retried jobs");
    assert!(browser.text(&worker).await.contains(QUEUE));
    browser.screenshot("workers").await;

    // They complete; the overview's counts follow without a reload.
    browser.click("a#nav-overview").await;
    browser.wait_page("overview").await;
    browser.script("window.notReloaded = true;", vec![]).await;
    app.outage.set(Phase::Working);
    browser.wait_text(&count_cell("completed"), "3").await;
    browser.wait_text(&count_cell("dead"), "0").await;
    browser.wait_text(&count_cell("running"), "0").await;
    assert_eq!(
        browser
            .script("return window.notReloaded === true;", vec![])
            .await,
        json!(true),
        "the counts changed without a reload"
    );
    app.wait_counts("3 completed", |c| c.completed == 3).await;

    // The cron schedule the worker recorded.
    browser.click("a#nav-schedules").await;
    browser.wait_page("schedules").await;
    let schedule = r#"table#schedules tr[data-schedule="mail.digest"]"#;
    browser.reload_until_count(schedule, 1).await;
    let text = browser.text(schedule).await;
    assert!(
        text.contains("0 3 * * *") && text.contains("Europe/Paris"),
        "{text}"
    );
    browser.screenshot("schedules").await;

    // The type the worker published: a payload that breaks its schema is refused, one that
    // matches is enqueued, and the worker runs it.
    browser.click("a#nav-types").await;
    browser.wait_page("types").await;
    let deliver = r#"table#types tr[data-type="mail.deliver"]"#;
    browser.reload_until_count(deliver, 1).await;
    browser.click(&format!("{deliver} a.type-link")).await;
    browser.wait_page("type").await;
    assert!(browser.text("pre#type-schema").await.contains("\"to\""));
    browser.fill("textarea#payload", r#"{"to": 7}"#).await;
    browser.click("button#enqueue-submit").await;
    browser.wait_page("type").await;
    assert!(
        browser.text("#enqueue-problems").await.contains("/to"),
        "the problem names the field"
    );
    browser.screenshot("type-refused").await;
    browser
        .fill("textarea#payload", r#"{"to": "dee@example.com"}"#)
        .await;
    browser.click("button#enqueue-submit").await;
    browser.wait_page("job").await;
    assert!(browser.text("#notice").await.contains("Enqueued"));
    assert_eq!(browser.text("#job-version").await, "1");
    browser
        .wait_text("pre#job-result", "\"delivered to dee@example.com\"")
        .await;
    browser.screenshot("type-enqueued").await;

    browser.assert_no_alert().await;
    browser.close().await;
    app.stop().await;
}
