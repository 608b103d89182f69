//! Forged writes are refused and change nothing; read-only shows no action and refuses every
//! write; stored text is escaped.

use axum::http::StatusCode;
use jobs_core::{AnyBackend, JobStatus, Operations};
use serde_json::json;

use crate::support::{kill_all, new_job, on_every_store, put, put_n, Web};

on_every_store!(
    forged_posts_are_refused,
    read_only_shows_and_changes_nothing,
    stored_text_is_escaped
);

async fn forged_posts_are_refused(b: AnyBackend) {
    put_n(&b, "email", 1).await;
    let [dead] = kill_all(&b, "email", "boom").await[..] else {
        panic!()
    };
    let web = Web::new(&b);
    let token = web.token().await;
    let retry = format!("jobs/{dead}/retry");

    let none = web.post_form(&retry, &[], &[]).await;
    assert_eq!(none.status, StatusCode::FORBIDDEN);
    assert!(none.body.contains("CSRF token"));
    let wrong = web
        .post_form(&retry, &[("csrf", "not-the-token")], &[])
        .await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN);
    let cross = web
        .post_form(
            &retry,
            &[("csrf", &token)],
            &[("sec-fetch-site", "cross-site")],
        )
        .await;
    assert_eq!(cross.status, StatusCode::FORBIDDEN);
    assert!(cross.body.contains("another site"));
    let bulk = web
        .post_form("actions/delete-all", &[("confirmed", "1")], &[])
        .await;
    assert_eq!(bulk.status, StatusCode::FORBIDDEN);
    let api = web
        .post_json(&format!("api/{retry}"), None, json!({}))
        .await;
    assert_eq!(api.status, StatusCode::FORBIDDEN);
    assert!(api.json()["error"].as_str().unwrap().contains("CSRF"));
    let api = web
        .post_json("api/delete-all", Some("wrong"), json!({}))
        .await;
    assert_eq!(api.status, StatusCode::FORBIDDEN);
    let pause = web
        .post_form("queues/email/pause", &[("csrf", "x")], &[])
        .await;
    assert_eq!(pause.status, StatusCode::FORBIDDEN);

    assert_eq!(b.job(dead).await.unwrap().status, JobStatus::Dead);
    assert!(!b.queues().await.unwrap()[0].paused);
    let same_origin = web
        .post_form(
            &retry,
            &[("csrf", &token)],
            &[("sec-fetch-site", "same-origin")],
        )
        .await;
    assert_eq!(same_origin.status, StatusCode::SEE_OTHER);
    assert_eq!(b.job(dead).await.unwrap().status, JobStatus::Pending);
}

async fn read_only_shows_and_changes_nothing(b: AnyBackend) {
    put_n(&b, "email", 1).await;
    let [dead] = kill_all(&b, "email", "boom").await[..] else {
        panic!()
    };
    let web = Web::read_only(&b);
    for path in [
        "".to_string(),
        "jobs".into(),
        "dead".into(),
        format!("jobs/{dead}"),
    ] {
        let page = web.get(&path).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        assert!(
            !page.body.contains("<button type=\"submit\""),
            "{path}: {}",
            page.body
        );
        assert!(!page.body.contains("method=\"post\""), "{path}");
        assert!(page.body.contains("read-only"));
    }
    let token = web.token().await;
    for path in [
        format!("jobs/{dead}/retry"),
        format!("jobs/{dead}/delete"),
        "actions/delete-all".into(),
        "queues/email/pause".into(),
    ] {
        let reply = web
            .post_form(&path, &[("csrf", &token), ("confirmed", "1")], &[])
            .await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{path}");
        assert!(reply.body.contains("read-only"));
        let api = web
            .post_json(&format!("api/{path}"), Some(&token), json!({}))
            .await;
        assert_eq!(api.status, StatusCode::FORBIDDEN, "api/{path}");
    }
    assert_eq!(
        web.post_json("api/delete-all", Some(&token), json!({}))
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(b.job(dead).await.unwrap().status, JobStatus::Dead);
    assert!(!b.queues().await.unwrap()[0].paused);
}

async fn stored_text_is_escaped(b: AnyBackend) {
    let script = "<script>alert(1)</script>";
    let mut job = new_job("email", script, json!({ "html": script }));
    job.tags = vec![script.into()];
    put(&b, vec![job]).await;
    let [dead] = kill_all(&b, "email", script).await[..] else {
        panic!()
    };
    let web = Web::new(&b);
    for path in [format!("jobs/{dead}"), "dead".into(), "jobs".into()] {
        let page = web.get(&path).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(!page.body.contains("<script>alert"), "{path}: raw script");
        assert!(
            page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{path}"
        );
    }
    let page = web.get(&format!("jobs/{dead}")).await;
    assert_eq!(
        page.text_after(r#"id="attempts""#, r#"class="error-message""#),
        "&lt;script&gt;alert(1)&lt;/script&gt;"
    );
    assert!(page
        .body
        .contains("&quot;html&quot;: &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;"));
}
