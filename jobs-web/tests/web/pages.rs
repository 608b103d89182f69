//! Every page renders what the store holds.

use std::time::Duration;

use axum::http::StatusCode;
use jobs_core::{
    AnyBackend, Backend, HeartbeatParams, SaveSchedulesParams, ScheduleInfo, WorkerInfo,
};
use serde_json::json;

use crate::support::{
    complete_all, kill_all, lease, new_job, now, on_every_store, on_redis_streams, put, put_n, Web,
};

on_every_store!(
    overview_counts_each_queue,
    lists_filter_and_page,
    a_job_shows_everything,
    dead_lists_only_dead_jobs,
    schedules_and_workers_show
);
on_redis_streams!(
    overview_counts_each_queue,
    lists_filter_and_page,
    a_job_shows_everything,
    dead_lists_only_dead_jobs,
    schedules_and_workers_show
);

async fn overview_counts_each_queue(b: AnyBackend) {
    put_n(&b, "email", 1).await;
    complete_all(&b, "email").await;
    put_n(&b, "email", 3).await;
    kill_all(&b, "email", "smtp refused").await;
    put_n(&b, "email", 2).await;
    let mut later = new_job("billing", "invoice", json!({}));
    later.run_at = now() + chrono::Duration::hours(1);
    put(&b, vec![later]).await;

    let page = Web::new(&b).get("").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains(r#"data-page="overview""#));
    assert!(page.body.contains(r#"id="queues""#));
    let cell = |queue: &str, count: &str| {
        page.text_after(
            &format!(r#"data-queue="{queue}""#),
            &format!(r#"data-count="{count}""#),
        )
    };
    assert_eq!(cell("email", "pending"), "2");
    assert_eq!(cell("email", "completed"), "1");
    assert_eq!(cell("email", "dead"), "3");
    assert_eq!(cell("email", "scheduled"), "0");
    assert_eq!(cell("email", "waiting"), "0");
    assert_eq!(cell("email", "finished_last_hour"), "1");
    assert_eq!(cell("billing", "scheduled"), "1");
    assert_eq!(cell("billing", "pending"), "0");
    assert_eq!(
        page.text_after(r#"data-queue="email""#, r#"class="paused""#),
        "no"
    );
    assert!(page.body.contains(r#"<a href="dead?queue=email">3</a>"#));
    assert!(page.body.contains(r#"action="queues/email/pause""#));
    for nav in ["nav-overview", "nav-dead", "nav-schedules", "nav-workers"] {
        assert!(page.body.contains(&format!(r#"id="{nav}""#)), "{nav}");
    }

    let api = Web::new(&b).get("api/queues").await.json();
    let email = &api.as_array().unwrap()[1];
    assert_eq!(email["name"], "email");
    assert_eq!(email["counts"]["dead"], 3);
    assert_eq!(email["counts"]["waiting"], 0);
    assert_eq!(email["finished_last_hour"], 1);
}

async fn lists_filter_and_page(b: AnyBackend) {
    let ids = put_n(&b, "bulk", 60).await;
    put_n(&b, "other", 2).await;
    let web = Web::new(&b);

    let first = web.get("jobs?queue=bulk").await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(first.body.contains(r#"data-page="jobs""#));
    assert!(first.body.contains(r#"id="filters""#) && first.body.contains(r#"id="apply""#));
    assert_eq!(first.count("<tr data-job="), 50);
    assert!(first
        .body
        .contains(&format!(r#"<tr data-job="{}""#, ids[0])));
    assert!(!first
        .body
        .contains(&format!(r#"<tr data-job="{}""#, ids[50])));
    let next = first
        .body
        .split(r#"id="next-page" href=""#)
        .nth(1)
        .expect("a next page link");
    let next = next[..next.find('"').unwrap()].replace("&amp;", "&");
    assert_eq!(next, format!("jobs?queue=bulk&after={}", ids[49]));

    let second = web.get(&next).await;
    assert_eq!(second.count("<tr data-job="), 10);
    assert!(second
        .body
        .contains(&format!(r#"<tr data-job="{}""#, ids[59])));
    assert!(!second.body.contains("next-page"));

    let pending = web.get("jobs?status=pending").await;
    assert_eq!(pending.count("<tr data-job="), 50);
    assert_eq!(
        web.get("jobs?queue=other&status=pending")
            .await
            .count("<tr data-job="),
        2
    );
    assert_eq!(
        web.get("jobs?queue=other&status=dead")
            .await
            .count("<tr data-job="),
        0
    );

    let api = web.get("api/jobs?queue=bulk&limit=40").await.json();
    assert_eq!(api["jobs"].as_array().unwrap().len(), 40);
    assert_eq!(api["next"], ids[39].to_string());
    let count = web.get("api/count?queue=bulk").await.json();
    assert_eq!(count, json!({ "count": 60, "capped": false }));
}

async fn a_job_shows_everything(b: AnyBackend) {
    let mut job = new_job(
        "email",
        "send_welcome",
        json!({ "to": "alice@example.com", "n": 7 }),
    );
    job.tags = vec!["order:42".into()];
    job.unique_key = Some("welcome-alice".into());
    let [done] = put(&b, vec![job]).await[..] else {
        panic!()
    };
    complete_all(&b, "email").await;
    put_n(&b, "email", 1).await;
    let [dead] = kill_all(&b, "email", "mailbox full").await[..] else {
        panic!()
    };
    let web = Web::new(&b);

    let page = web.get(&format!("jobs/{done}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains(r#"data-page="job""#));
    assert!(page
        .body
        .contains(r#"<span id="job-status" class="badge status-completed">completed</span>"#));
    assert!(page.body.contains(r#"<span id="job-progress">0%</span>"#));
    assert!(page.body.contains("id=\"job-payload\">{\n  &quot;n&quot;: 7,\n  &quot;to&quot;: &quot;alice@example.com&quot;\n}</pre>"));
    assert!(page
        .body
        .contains("id=\"job-result\">{\n  &quot;sent&quot;: true\n}</pre>"));
    assert!(page.body.contains("order:42") && page.body.contains("welcome-alice"));
    assert!(page.body.contains(r#"id="delete""#));
    assert!(!page.body.contains(r#"id="retry""#) && !page.body.contains(r#"id="cancel""#));

    let page = web.get(&format!("jobs/{dead}")).await;
    assert!(page.body.contains(r#"id="attempts""#));
    assert_eq!(
        page.text_after(r#"id="attempts""#, r#"class="error-kind""#),
        "fatal"
    );
    assert_eq!(
        page.text_after(r#"id="attempts""#, r#"class="error-message""#),
        "mailbox full"
    );
    assert!(page.body.contains(r#"id="retry""#) && page.body.contains(r#"id="delete""#));
    assert!(!page.body.contains(r#"id="cancel""#));

    let api = web.get(&format!("api/jobs/{dead}")).await.json();
    assert_eq!(api["status"], "dead");
    assert_eq!(api["errors"][0]["message"], "mailbox full");
}

async fn dead_lists_only_dead_jobs(b: AnyBackend) {
    put_n(&b, "email", 2).await;
    let dead = kill_all(&b, "email", "boom").await;
    let pending = put_n(&b, "email", 1).await;
    let page = Web::new(&b).get("dead?queue=email").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains(r#"data-page="dead""#));
    assert_eq!(page.count("<tr data-job="), 2);
    for id in &dead {
        assert!(page.body.contains(&format!(r#"<tr data-job="{id}""#)));
        assert!(page.body.contains(&format!(r#"action="jobs/{id}/retry""#)));
        assert!(page.body.contains(&format!(r#"action="jobs/{id}/delete""#)));
    }
    assert!(!page.body.contains(&pending[0].to_string()));
    assert!(page.body.contains(r#"id="retry-all""#) && page.body.contains(r#"id="delete-all""#));
    assert_eq!(
        page.text_after(&format!(r#"data-job="{}""#, dead[0]), r#"class="status""#),
        "dead"
    );
}

async fn schedules_and_workers_show(b: AnyBackend) {
    let schedule = ScheduleInfo {
        name: "nightly_report".into(),
        queue: "reports".into(),
        expression: "0 3 * * *".into(),
        timezone: "Europe/Paris".into(),
    };
    b.save_schedules(SaveSchedulesParams {
        schedules: vec![schedule],
        now: now(),
    })
    .await
    .unwrap();
    let worker = WorkerInfo {
        id: "worker-web-1".into(),
        host: "box-1".into(),
        pid: 4242,
        queues: vec!["email".into()],
        concurrency: 5,
        names: vec!["welcome".into()],
        started_at: now(),
        last_seen: now(),
    };
    b.heartbeat(HeartbeatParams {
        worker,
        expires_at: now() + chrono::Duration::from_std(Duration::from_secs(60)).unwrap(),
        now: now(),
    })
    .await
    .unwrap();
    put_n(&b, "email", 1).await;
    let running = lease(&b, "email", "worker-web-1").await;
    let web = Web::new(&b);

    let page = web.get("schedules").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains(r#"<tr data-schedule="nightly_report""#));
    assert!(page.body.contains("0 3 * * *") && page.body.contains("Europe/Paris"));
    assert_eq!(page.count("<div><time"), 3, "three next ticks");

    let page = web.get("workers").await;
    assert!(page.body.contains(r#"<tr data-worker="worker-web-1""#));
    assert!(page.body.contains("box-1") && page.body.contains("4242"));
    let id = running[0].record.id;
    assert!(page.body.contains(&format!(r#"href="jobs/{id}""#)));
    assert_eq!(
        web.get("api/workers").await.json()[0]["running"][0],
        id.to_string()
    );
}
