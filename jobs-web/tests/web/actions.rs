//! Retry, cancel, delete, retry all, delete all, pause and resume, through the forms and the
//! JSON API.

use axum::http::StatusCode;
use jobs_core::{AnyBackend, JobFilter, JobStatus, Operations, PageRequest};
use serde_json::json;

use crate::support::{kill_all, on_every_store, on_redis_streams, put_n, Web};

on_every_store!(
    forms_act_on_one_job,
    the_api_acts_on_one_job,
    bulk_actions_confirm_the_exact_count,
    the_api_applies_bulk_actions,
    queues_pause_and_resume
);
on_redis_streams!(
    forms_act_on_one_job,
    the_api_acts_on_one_job,
    bulk_actions_confirm_the_exact_count,
    the_api_applies_bulk_actions,
    queues_pause_and_resume
);

async fn status(b: &AnyBackend, id: jobs_core::JobId) -> Option<JobStatus> {
    b.job(id).await.ok().map(|j| j.status)
}

async fn forms_act_on_one_job(b: AnyBackend) {
    put_n(&b, "email", 1).await;
    let [dead] = kill_all(&b, "email", "boom").await[..] else {
        panic!()
    };
    let [pending] = put_n(&b, "email", 1).await[..] else {
        panic!()
    };
    let web = Web::new(&b);

    let reply = web.submit(&format!("jobs/{dead}/retry"), &[]).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    let location = reply.location.unwrap();
    assert!(
        location.starts_with(&format!("/jobs/{dead}?notice=Retried")),
        "{location}"
    );
    assert_eq!(status(&b, dead).await, Some(JobStatus::Pending));
    let page = web.get(&location).await;
    assert!(page.body.contains(r#"id="notice""#) && page.body.contains("Retried job"));

    let reply = web.submit(&format!("jobs/{pending}/cancel"), &[]).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    assert_eq!(status(&b, pending).await, Some(JobStatus::Cancelled));

    let again = web.submit(&format!("jobs/{pending}/cancel"), &[]).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert!(
        again.body.contains("is cancelled: cannot cancel it"),
        "{}",
        again.body
    );

    let reply = web.submit(&format!("jobs/{pending}/delete"), &[]).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    let location = reply.location.unwrap();
    assert!(
        location.starts_with("/jobs?queue=email&status=cancelled&notice=Deleted"),
        "{location}"
    );
    assert_eq!(status(&b, pending).await, None);
    assert_eq!(status(&b, dead).await, Some(JobStatus::Pending));
}

async fn the_api_acts_on_one_job(b: AnyBackend) {
    put_n(&b, "email", 1).await;
    let [dead] = kill_all(&b, "email", "boom").await[..] else {
        panic!()
    };
    let [pending] = put_n(&b, "email", 1).await[..] else {
        panic!()
    };
    let web = Web::new(&b);
    let token = web.token().await;

    let reply = web
        .post_json(&format!("api/jobs/{dead}/retry"), Some(&token), json!({}))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        reply.json(),
        json!({ "id": dead.to_string(), "action": "retry" })
    );
    assert_eq!(status(&b, dead).await, Some(JobStatus::Pending));

    let reply = web
        .post_json(&format!("api/jobs/{dead}/retry"), Some(&token), json!({}))
        .await;
    assert_eq!(reply.status, StatusCode::CONFLICT);
    assert!(reply.json()["error"]
        .as_str()
        .unwrap()
        .contains("cannot retry"));

    let reply = web
        .post_json(
            &format!("api/jobs/{pending}/cancel"),
            Some(&token),
            json!({}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(status(&b, pending).await, Some(JobStatus::Cancelled));

    let reply = web
        .post_json(
            &format!("api/jobs/{pending}/delete"),
            Some(&token),
            json!({}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(status(&b, pending).await, None);
    let reply = web
        .post_json(
            &format!("api/jobs/{pending}/delete"),
            Some(&token),
            json!({}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
}

async fn bulk_actions_confirm_the_exact_count(b: AnyBackend) {
    put_n(&b, "email", 3).await;
    let dead_email = kill_all(&b, "email", "boom").await;
    put_n(&b, "sms", 2).await;
    let dead_sms = kill_all(&b, "sms", "boom").await;
    let pending = put_n(&b, "email", 1).await;
    let web = Web::new(&b);
    let filter = [("queue", "email"), ("status", "dead")];

    let confirm = web.submit("actions/retry-all", &filter).await;
    assert_eq!(confirm.status, StatusCode::OK);
    assert!(confirm.body.contains(r#"data-page="confirm""#));
    assert!(
        confirm
            .body
            .contains(r#"<span id="confirm-count">3</span>"#),
        "{}",
        confirm.body
    );
    assert!(
        confirm.body.contains(r#"id="confirm""#)
            && confirm.body.contains(r#"name="confirmed" value="1""#)
    );
    for id in dead_email.iter().chain(&dead_sms) {
        assert_eq!(
            status(&b, *id).await,
            Some(JobStatus::Dead),
            "nothing changed before confirming"
        );
    }

    let done = web
        .submit(
            "actions/retry-all",
            &[filter[0], filter[1], ("confirmed", "1")],
        )
        .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER);
    let location = done.location.unwrap();
    assert!(
        location.starts_with("/dead?queue=email&status=dead&notice=Retried+3+jobs"),
        "{location}"
    );
    for id in &dead_email {
        assert_eq!(status(&b, *id).await, Some(JobStatus::Pending));
    }
    for id in &dead_sms {
        assert_eq!(
            status(&b, *id).await,
            Some(JobStatus::Dead),
            "another queue's jobs stay dead"
        );
    }

    let sms = [("queue", "sms"), ("status", "dead")];
    let confirm = web.submit("actions/delete-all", &sms).await;
    assert!(confirm
        .body
        .contains(r#"<span id="confirm-count">2</span>"#));
    let done = web
        .submit("actions/delete-all", &[sms[0], sms[1], ("confirmed", "1")])
        .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER);
    for id in &dead_sms {
        assert_eq!(status(&b, *id).await, None);
    }
    let left = b
        .jobs(&JobFilter::new(), PageRequest::default().limit(100))
        .await
        .unwrap();
    assert_eq!(left.jobs.len(), dead_email.len() + pending.len());
}

async fn the_api_applies_bulk_actions(b: AnyBackend) {
    put_n(&b, "email", 2).await;
    let dead = kill_all(&b, "email", "boom").await;
    let pending = put_n(&b, "email", 1).await;
    let web = Web::new(&b);
    let token = web.token().await;

    assert_eq!(
        web.get("api/count?queue=email&status=dead").await.json()["count"],
        2
    );
    let reply = web
        .post_json(
            "api/retry-all",
            Some(&token),
            json!({ "queue": "email", "status": "dead" }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json(), json!({ "changed": 2 }));
    for id in &dead {
        assert_eq!(status(&b, *id).await, Some(JobStatus::Pending));
    }
    let reply = web
        .post_json("api/delete-all", Some(&token), json!({ "queue": "email" }))
        .await;
    assert_eq!(reply.json(), json!({ "changed": 3 }));
    assert_eq!(status(&b, pending[0]).await, None);
    let reply = web
        .post_json(
            "api/delete-all",
            Some(&token),
            json!({ "status": "zombie" }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(reply.json()["error"]
        .as_str()
        .unwrap()
        .contains("unknown job status `zombie`"));
}

async fn queues_pause_and_resume(b: AnyBackend) {
    put_n(&b, "email", 1).await;
    let web = Web::new(&b);
    let paused = |b: AnyBackend| async move {
        b.queues()
            .await
            .unwrap()
            .into_iter()
            .find(|q| q.name == "email")
            .unwrap()
            .paused
    };

    let reply = web.submit("queues/email/pause", &[]).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    assert_eq!(
        reply.location.as_deref(),
        Some("/?notice=Paused+queue+email.")
    );
    assert!(paused(b.clone()).await);
    let page = web.get("").await;
    assert_eq!(
        page.text_after(r#"data-queue="email""#, r#"class="paused""#),
        "yes"
    );
    assert!(page.body.contains(r#"class="resume""#) && !page.body.contains(r#"class="pause""#));

    let reply = web.submit("queues/email/resume", &[]).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    assert!(!paused(b.clone()).await);

    let token = web.token().await;
    let reply = web
        .post_json("api/queues/email/pause", Some(&token), json!({}))
        .await;
    assert_eq!(reply.json(), json!({ "queue": "email", "paused": true }));
    assert!(paused(b.clone()).await);
    web.post_json("api/queues/email/resume", Some(&token), json!({}))
        .await;
    assert!(!paused(b).await);
}
