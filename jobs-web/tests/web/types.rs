//! The catalog of job types: the list, a type's page with its schema, and enqueueing a job of a
//! type with a JSON payload, through the form and the API; checked against the schema, refused
//! when read-only.

use axum::http::StatusCode;
use jobs_core::{AnyBackend, JobFilter, JobId, Operations, PageRequest};
use serde_json::{json, Value};

use crate::support::{on_every_store, publish, Web, NAME};

on_every_store!(
    the_catalog_lists_each_type_and_shows_its_schema,
    the_form_enqueues_a_valid_payload_and_refuses_others,
    read_only_shows_no_form_and_refuses_enqueues,
    the_api_reads_the_catalog_and_enqueues
);

/// Every stored job.
async fn stored(b: &AnyBackend) -> Vec<jobs_core::JobRecord> {
    b.jobs(&JobFilter::default(), PageRequest::default())
        .await
        .expect("jobs")
        .jobs
}

/// The job a 303 after an enqueue points at (`/jobs/{id}?notice=…`).
fn redirected_job(location: Option<&str>) -> JobId {
    let location = location.expect("a Location");
    let rest = location.strip_prefix("/jobs/").expect("to a job");
    let id = rest.split('?').next().unwrap();
    id.parse().expect("a job id")
}

async fn the_catalog_lists_each_type_and_shows_its_schema(b: AnyBackend) {
    let web = Web::new(&b);
    let empty = web.get("types").await;
    assert_eq!(empty.status, StatusCode::OK);
    assert!(empty.body.contains("No job types"));

    publish(&b).await;
    let list = web.get("types").await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(list.body.contains(r#"data-page="types""#));
    assert!(list.body.contains(r#"id="nav-types""#));
    assert_eq!(list.count(&format!(r#"data-type="{NAME}""#)), 2);
    let row = format!(r#"data-type="{NAME}" data-version="2""#);
    assert!(list.body.contains(&row), "{}", list.body);
    assert!(list.body.contains(&format!(
        r#"<a class="type-link" href="types/{NAME}">{NAME}</a>"#
    )));
    assert!(list
        .body
        .contains(r#"<a href="jobs?queue=email">email</a>"#));
    let version = list.text_after(&row, r#"class="num""#);
    assert_eq!(version, "2", "the version cell");
    assert!(list.body.contains(" s ago</time>"), "published ago");

    let page = web.get(&format!("types/{NAME}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains(r#"data-page="type""#));
    assert_eq!(
        page.text_after(r#"id="job-type""#, r#"id="type-version""#),
        "2"
    );
    assert!(!page.body.contains("<script>alert"), "raw script");
    assert!(page
        .body
        .contains("&quot;description&quot;: &quot;Welcomes a new user. &lt;script&gt;alert(1)&lt;/script&gt;&quot;"));
    assert!(
        page.body.contains("&quot;required&quot;: ["),
        "pretty-printed"
    );
    assert!(page
        .body
        .contains(&format!(r#"action="types/{NAME}/enqueue""#)));
    assert!(page.body.contains(r#"name="payload""#));
    assert!(page.body.contains(r#"name="csrf""#));

    let unknown = web.get("types/no_such_job").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(unknown.body.contains("no_such_job"));
}

async fn the_form_enqueues_a_valid_payload_and_refuses_others(b: AnyBackend) {
    publish(&b).await;
    let web = Web::new(&b);
    let action = format!("types/{NAME}/enqueue");

    let good = r#"{"user_id": 123, "email": "alice@example.com"}"#;
    let done = web.submit(&action, &[("payload", good)]).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    let id = redirected_job(done.location.as_deref());
    let job = b.job(id).await.expect("the job is stored");
    assert_eq!(&*job.name, NAME);
    assert_eq!(job.version, 2);
    assert_eq!(&*job.queue, "email");
    assert_eq!(job.max_attempts, 3);
    assert_eq!(job.priority, 2);
    assert_eq!(job.tags, vec!["onboarding".to_string()]);
    let payload: Value = serde_json::from_str(job.payload.get()).unwrap();
    assert_eq!(
        payload,
        json!({ "user_id": 123, "email": "alice@example.com" })
    );
    let shown = web.get(done.location.as_deref().unwrap()).await;
    assert_eq!(shown.status, StatusCode::OK);
    assert!(shown.body.contains(&format!("Enqueued job {id}.")));
    assert_eq!(shown.text_after(r#"id="job""#, r#"id="job-version""#), "2");

    let missing = r#"{"email": "bob@example.com"}"#;
    let refused = web.submit(&action, &[("payload", missing)]).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.body.contains(r#"id="enqueue-problems""#));
    assert!(refused.body.contains("schema of version 2"));
    assert!(
        refused
            .body
            .contains("&quot;user_id&quot; is a required property"),
        "{}",
        refused.body
    );
    assert!(
        refused
            .body
            .contains("{&quot;email&quot;: &quot;bob@example.com&quot;}</textarea>"),
        "the payload is kept"
    );

    let wrong = r#"{"user_id": "one", "email": 7}"#;
    let refused = web.submit(&action, &[("payload", wrong)]).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(refused.count("<li>at `/"), 2, "{}", refused.body);
    assert!(refused.body.contains("at `/user_id`"));
    assert!(refused.body.contains("at `/email`"));

    let broken = web
        .submit(&action, &[("payload", "{\"user_id\": 1,")])
        .await;
    assert_eq!(broken.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(broken.body.contains("not JSON"));
    assert!(broken.body.contains("{&quot;user_id&quot;: 1,</textarea>"));

    let unknown = web
        .submit("types/no_such_job/enqueue", &[("payload", good)])
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);

    let jobs = stored(&b).await;
    assert_eq!(jobs.len(), 1, "only the valid payload was stored");
    assert_eq!(jobs[0].id, id);
}

async fn read_only_shows_no_form_and_refuses_enqueues(b: AnyBackend) {
    publish(&b).await;
    let web = Web::read_only(&b);
    let page = web.get(&format!("types/{NAME}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains(r#"id="type-schema""#));
    assert!(!page.body.contains(r#"id="enqueue""#));
    assert!(!page.body.contains("method=\"post\""));
    assert!(!page.body.contains("<textarea"));

    let token = web.token().await;
    let good = r#"{"user_id": 123, "email": "alice@example.com"}"#;
    let form = web
        .post_form(
            &format!("types/{NAME}/enqueue"),
            &[("csrf", &token), ("payload", good)],
            &[],
        )
        .await;
    assert_eq!(form.status, StatusCode::FORBIDDEN);
    assert!(form.body.contains("read-only"));
    let api = web
        .post_json(
            &format!("api/types/{NAME}/enqueue"),
            Some(&token),
            json!({ "user_id": 123, "email": "alice@example.com" }),
        )
        .await;
    assert_eq!(api.status, StatusCode::FORBIDDEN);
    assert!(stored(&b).await.is_empty());
}

async fn the_api_reads_the_catalog_and_enqueues(b: AnyBackend) {
    publish(&b).await;
    let web = Web::new(&b);

    let types = web.get("api/types").await;
    assert_eq!(types.status, StatusCode::OK);
    let versions: Vec<(Value, Value)> = types
        .json()
        .as_array()
        .expect("a list")
        .iter()
        .map(|t| (t["info"]["name"].clone(), t["info"]["version"].clone()))
        .collect();
    assert_eq!(versions, [(json!(NAME), json!(1)), (json!(NAME), json!(2))]);

    let newest = web.get(&format!("api/types/{NAME}")).await;
    assert_eq!(newest.status, StatusCode::OK);
    let newest = newest.json();
    assert_eq!(newest["info"]["version"], 2);
    assert_eq!(newest["info"]["queue"], "email");
    assert_eq!(
        newest["info"]["schema"]["required"],
        json!(["user_id", "email"])
    );
    assert!(newest["published_at"].is_string());
    let unknown = web.get("api/types/no_such_job").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(unknown.json()["error"]
        .as_str()
        .unwrap()
        .contains("no_such_job"));

    let token = web.token().await;
    let path = format!("api/types/{NAME}/enqueue");
    let body = json!({ "user_id": 7, "email": "carol@example.com" });
    let forged = web.post_json(&path, None, body.clone()).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    assert!(stored(&b).await.is_empty());

    let created = web.post_json(&path, Some(&token), body.clone()).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let created = created.json();
    assert_eq!(created["duplicate"], false);
    let id: JobId = created["id"].as_str().unwrap().parse().unwrap();
    let job = b.job(id).await.expect("the job is stored");
    assert_eq!((&*job.name, job.version, &*job.queue), (NAME, 2, "email"));
    assert_eq!(
        serde_json::from_str::<Value>(job.payload.get()).unwrap(),
        body
    );
    assert_eq!(
        web.get(&format!("api/jobs/{id}")).await.json()["version"],
        2
    );

    let invalid = web
        .post_json(&path, Some(&token), json!({ "user_id": 1.5 }))
        .await;
    assert_eq!(invalid.status, StatusCode::UNPROCESSABLE_ENTITY);
    let invalid = invalid.json();
    let problems: Vec<&str> = invalid["problems"]
        .as_array()
        .expect("the problems")
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems.iter().any(|p| p.contains("/user_id")));
    assert!(problems
        .iter()
        .any(|p| p.contains("\"email\" is a required property")));
    assert!(invalid["error"].as_str().unwrap().contains(NAME));

    let unknown = web
        .post_json("api/types/no_such_job/enqueue", Some(&token), body)
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let jobs = stored(&b).await;
    assert_eq!(jobs.len(), 1, "only the valid payload was stored");
    assert_eq!(jobs[0].id, id);
}
