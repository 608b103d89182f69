//! Nested under `/ops/jobs`, every link, form and redirect stays under the prefix.

use axum::http::StatusCode;
use jobs_core::{AnyBackend, JobStatus, Operations};

use crate::support::{kill_all, on_every_store, publish, put_n, Web, NAME};

on_every_store!(nested_pages_resolve_under_the_prefix);

async fn nested_pages_resolve_under_the_prefix(b: AnyBackend) {
    put_n(&b, "email", 1).await;
    let [dead] = kill_all(&b, "email", "boom").await[..] else {
        panic!()
    };
    publish(&b).await;
    let web = Web::nested(&b, "/ops/jobs");
    for path in [
        "".to_string(),
        "jobs?queue=email".into(),
        "dead".into(),
        format!("jobs/{dead}"),
        "schedules".into(),
        "workers".into(),
        "types".into(),
        format!("types/{NAME}"),
    ] {
        let page = web.get(&path).await;
        assert_eq!(page.status, StatusCode::OK, "{path}: {}", page.body);
        assert!(page.body.contains(r#"<base href="/ops/jobs/">"#), "{path}");
        assert!(
            page.body.contains(r#"id="nav-overview" href="../jobs""#),
            "{path}: the overview at /ops/jobs"
        );
        assert_eq!(
            page.count("href=\"/"),
            1,
            "{path}: a link not relative to the base (only <base> is absolute)"
        );
        assert!(
            !page.body.contains("action=\"/"),
            "{path}: a form not relative to the base"
        );
        assert!(!page.body.contains("src=\"/"), "{path}");
    }
    let css = web.get("assets/dashboard.css").await;
    assert_eq!(css.status, StatusCode::OK);
    assert!(css.content_type.starts_with("text/css"));
    assert!(web
        .get("assets/dashboard.js")
        .await
        .content_type
        .starts_with("text/javascript"));

    let reply = web.submit(&format!("jobs/{dead}/retry"), &[]).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    let location = reply.location.unwrap();
    assert!(
        location.starts_with(&format!("/ops/jobs/jobs/{dead}?notice=")),
        "{location}"
    );
    assert_eq!(b.job(dead).await.unwrap().status, JobStatus::Pending);
    let reply = web
        .submit(
            &format!("types/{NAME}/enqueue"),
            &[("payload", r#"{"user_id": 1, "email": "a@example.com"}"#)],
        )
        .await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
    let location = reply.location.unwrap();
    assert!(location.starts_with("/ops/jobs/jobs/"), "{location}");
    let reply = web.submit("queues/email/pause", &[]).await;
    assert!(reply.location.unwrap().starts_with("/ops/jobs?notice="));
    let missing = web.get("nope").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert!(missing.body.contains(r#"<base href="/ops/jobs/">"#));
}
