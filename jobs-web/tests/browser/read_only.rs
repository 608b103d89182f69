//! The read-only dashboard shows no action, and forged writes from a page (no token, a wrong
//! one, or any to the read-only dashboard) answer 403 and change nothing.

use jobs_core::{JobStatus, Operations};
use serde_json::{json, Value};

use crate::app::{App, Phase, ERROR, FULL, QUEUE, READ_ONLY};
use crate::chrome::Browser;
use crate::store::Kind;

/// POSTs `body` to `url` with `fetch()` from the page shown: the answer's status.
async fn post(
    browser: &Browser,
    url: &str,
    content_type: &str,
    body: &str,
    token: Option<&str>,
) -> Value {
    let script = r#"
        const [url, contentType, body, token, done] = arguments;
        const headers = { "content-type": contentType };
        if (token !== null) headers["x-csrf-token"] = token;
        fetch(url, { method: "POST", headers, body })
            .then(r => done(r.status), e => done("failed: " + e));
    "#;
    browser
        .script_async(
            script,
            vec![json!(url), json!(content_type), json!(body), json!(token)],
        )
        .await
}

/// A form POST of `fields` (URL-encoded) to `url` from the page shown.
async fn post_form(browser: &Browser, url: &str, fields: &str) -> Value {
    post(
        browser,
        url,
        "application/x-www-form-urlencoded",
        fields,
        None,
    )
    .await
}

pub(crate) async fn read_only_refuses(kind: Kind) {
    let app = App::start(kind).await;
    let id = app.deliver("ada@example.com", "vip").await;
    app.wait_counts("1 dead", |c| c.dead == 1).await;
    let browser = Browser::start(&app.origin, &format!("{}-read-only", kind.name())).await;

    // No action anywhere: overview, dead list, job.
    browser.open(READ_ONLY).await;
    browser.wait_page("overview").await;
    browser
        .wait_text(
            &format!(r#"tr[data-queue="{QUEUE}"] td[data-count="dead"]"#),
            "1",
        )
        .await;
    assert!(
        browser.all("button").await.is_empty(),
        "no buttons on the overview"
    );
    assert!(browser.all(r#"form[method="post"]"#).await.is_empty());
    browser.screenshot("overview").await;
    browser
        .click(&format!(
            r#"tr[data-queue="{QUEUE}"] td[data-count="dead"] a"#
        ))
        .await;
    browser.wait_page("dead").await;
    assert_eq!(browser.all("table#jobs tr[data-job]").await.len(), 1);
    assert!(
        browser.all("button:not(#apply)").await.is_empty(),
        "no buttons on the dead list but its filters' apply"
    );
    assert!(browser.all(r#"form[method="post"]"#).await.is_empty());
    browser.screenshot("dead").await;
    browser
        .click(&format!(r#"tr[data-job="{id}"] a.job-link"#))
        .await;
    browser.wait_page("job").await;
    assert_eq!(browser.text("#job-status").await, "dead");
    assert_eq!(browser.text("table#attempts td.error-message").await, ERROR);
    assert!(
        browser.all("button").await.is_empty(),
        "no buttons on the job"
    );
    browser.assert_no_alert().await;
    browser.screenshot("job").await;

    // The type the worker published: its schema, and no form to enqueue.
    browser.click("a#nav-types").await;
    browser.wait_page("types").await;
    let deliver = r#"table#types tr[data-type="mail.deliver"]"#;
    browser.reload_until_count(deliver, 1).await;
    browser.click(&format!("{deliver} a.type-link")).await;
    browser.wait_page("type").await;
    assert!(browser.text("pre#type-schema").await.contains("\"to\""));
    assert!(browser.all("textarea, button").await.is_empty(), "no form");
    assert!(browser.all(r#"form[method="post"]"#).await.is_empty());
    browser.screenshot("type").await;

    // Forged writes from this page.
    let own_token = browser
        .script(
            "return document.querySelector('meta[name=csrf-token]')?.content ?? null;",
            vec![],
        )
        .await;
    let own_token = own_token.as_str().map(str::to_string);
    let retry = format!("jobs/{id}/retry");
    let api_retry = format!("api/jobs/{id}/retry");
    let full_retry = format!("{FULL}/jobs/{id}/retry");
    let full_api_retry = format!("{FULL}/api/jobs/{id}/retry");
    let wrong = "00000000-0000-4000-8000-000000000000";
    for (what, status) in [
        ("read-only, no token", post_form(&browser, &retry, "").await),
        (
            "read-only, its own token",
            post_form(
                &browser,
                &retry,
                &format!("csrf={}", own_token.as_deref().unwrap_or(wrong)),
            )
            .await,
        ),
        (
            "read-only API, its own token",
            post(
                &browser,
                &api_retry,
                "application/json",
                "{}",
                own_token.as_deref().or(Some(wrong)),
            )
            .await,
        ),
        ("full, no token", post_form(&browser, &full_retry, "").await),
        (
            "full, a wrong token",
            post_form(&browser, &full_retry, &format!("csrf={wrong}")).await,
        ),
        (
            "full API, a wrong token",
            post(
                &browser,
                &full_api_retry,
                "application/json",
                "{}",
                Some(wrong),
            )
            .await,
        ),
    ] {
        assert_eq!(status, json!(403), "{what}");
    }
    let job = app.store.backend.job(id).await.expect("the job");
    assert_eq!(
        job.status,
        JobStatus::Dead,
        "the forged retries changed nothing"
    );
    assert_eq!(job.attempt, 2);
    assert_eq!(app.counts().await.dead, 1);
    browser.assert_no_alert().await;

    // The full dashboard's own page, with its token, does retry (the refusals were the guard's).
    browser.open(&format!("{FULL}/jobs/{id}")).await;
    browser.wait_page("job").await;
    app.outage.set(Phase::Working);
    browser.click("button#retry").await;
    browser.wait_text("#job-status", "completed").await;
    assert_eq!(
        app.store.backend.job(id).await.expect("the job").status,
        JobStatus::Completed
    );

    browser.close().await;
    app.stop().await;
}
