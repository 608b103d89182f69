//! Bad input answers a clear 400 or 404, as a page or as JSON.

use axum::http::StatusCode;
use jobs_core::{AnyBackend, JobId};

use crate::support::{on_every_store, Web};

on_every_store!(bad_input_is_answered_clearly);

async fn bad_input_is_answered_clearly(b: AnyBackend) {
    let web = Web::new(&b);
    let token = web.token().await;

    let page = web.get("jobs/not-a-uuid").await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(
        page.body.contains("`not-a-uuid` is not a job id"),
        "{}",
        page.body
    );
    let api = web.get("api/jobs/not-a-uuid").await;
    assert_eq!(api.status, StatusCode::BAD_REQUEST);
    assert!(api.json()["error"]
        .as_str()
        .unwrap()
        .contains("not a job id"));

    let unknown = JobId::new();
    let page = web.get(&format!("jobs/{unknown}")).await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    assert!(page.body.contains(&format!("job {unknown} not found")));
    let api = web.get(&format!("api/jobs/{unknown}")).await;
    assert_eq!(api.status, StatusCode::NOT_FOUND);
    assert_eq!(api.json()["error"], format!("job {unknown} not found"));
    let retry = web.submit(&format!("jobs/{unknown}/retry"), &[]).await;
    assert_eq!(retry.status, StatusCode::NOT_FOUND);
    let api = web
        .post_json(
            &format!("api/jobs/{unknown}/cancel"),
            Some(&token),
            serde_json::json!({}),
        )
        .await;
    assert_eq!(api.status, StatusCode::NOT_FOUND);

    let page = web.get("jobs?status=zombie").await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(page.body.contains("unknown job status `zombie`"));
    assert_eq!(
        web.get("api/jobs?status=zombie").await.status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        web.get("api/count?since=soon").await.status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        web.get("jobs?after=xyz").await.status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        web.get("api/jobs?limit=many").await.status,
        StatusCode::BAD_REQUEST
    );
    let bad_body = web
        .post_json("api/retry-all", Some(&token), serde_json::json!([1]))
        .await;
    assert_eq!(bad_body.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        web.get("api/nothing").await.json()["error"],
        "nothing here: /api/nothing"
    );
}
