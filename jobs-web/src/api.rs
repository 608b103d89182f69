//! The JSON API under `api/`: what the pages' script reads, and what scripts may call (see the
//! crate docs for every route). Errors answer `{"error": "..."}` with 400, 403, 404 or 409, and
//! a payload that breaks its type's schema `{"error": "...", "problems": [...]}` with 422.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use jobs_core::{
    Enqueued, JobRecord, Operations, Page, PageRequest, PublishedType, ScheduleSummary,
    WorkerSummary, WorkflowStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::count::{count, Count};
use crate::filters::{parse_after, parse_id, parse_workflow_id, FilterForm};
use crate::problem::Problem;
use crate::queues::{queues, QueueView};
use crate::verbs::{BulkAction, JobAction, QueueAction};
use crate::{events, Ctx};

/// What a route answers.
type Answer<T> = Result<Json<T>, Problem>;

/// The API's routes.
pub(crate) fn routes() -> Router<Ctx> {
    let mut router = Router::new()
        .route("/api/csrf", get(csrf))
        .route("/api/queues", get(get_queues))
        .route("/api/jobs", get(get_jobs))
        .route("/api/jobs/{id}", get(get_job))
        .route("/api/workflows/{id}", get(get_workflow))
        .route("/api/count", get(get_count))
        .route("/api/schedules", get(get_schedules))
        .route("/api/workers", get(get_workers))
        .route("/api/types", get(get_types))
        .route("/api/types/{name}", get(get_type))
        .route("/api/types/{name}/enqueue", post(enqueue))
        .route("/api/events", get(events::stream));
    for action in JobAction::ALL {
        router = router.route(
            &format!("/api/jobs/{{id}}/{}", action.name()),
            post(move |state, path| on_job(action, state, path)),
        );
    }
    for action in QueueAction::ALL {
        router = router.route(
            &format!("/api/queues/{{queue}}/{}", action.name()),
            post(move |state, path| on_queue(action, state, path)),
        );
    }
    for action in BulkAction::ALL {
        router = router.route(
            &format!("/api/{}", action.name()),
            post(move |state, body| on_matching(action, state, body)),
        );
    }
    router
}

async fn csrf(State(ctx): State<Ctx>) -> Json<Value> {
    Json(json!({ "token": &*ctx.csrf }))
}

async fn get_queues(State(ctx): State<Ctx>) -> Answer<Vec<QueueView>> {
    Ok(Json(queues(&ctx.backend).await?))
}

/// The query of `api/jobs`: the filter, the cursor and the page size (50 unless told, at most
/// 1,000).
#[derive(Debug, Deserialize)]
struct JobsQuery {
    #[serde(flatten)]
    filter: FilterForm,
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    limit: Option<String>,
}

async fn get_jobs(State(ctx): State<Ctx>, Query(q): Query<JobsQuery>) -> Answer<Page> {
    let filter = q.filter.to_filter()?;
    let mut page = PageRequest {
        after: parse_after(q.after.as_deref())?,
        ..PageRequest::default()
    };
    if let Some(limit) = q.limit.as_deref().filter(|l| !l.is_empty()) {
        page.limit = limit.parse().map_err(|_| {
            Problem::bad_request(format!("bad limit `{limit}`: expected a number of jobs"))
        })?;
    }
    Ok(Json(ctx.backend.jobs(&filter, page).await?))
}

async fn get_job(State(ctx): State<Ctx>, Path(id): Path<String>) -> Answer<JobRecord> {
    Ok(Json(ctx.backend.job(parse_id(&id)?).await?))
}

async fn get_workflow(State(ctx): State<Ctx>, Path(id): Path<String>) -> Answer<WorkflowStatus> {
    Ok(Json(ctx.backend.workflow(parse_workflow_id(&id)?).await?))
}

async fn get_count(State(ctx): State<Ctx>, Query(form): Query<FilterForm>) -> Answer<Count> {
    Ok(Json(count(&ctx.backend, &form.to_filter()?).await?))
}

async fn get_schedules(State(ctx): State<Ctx>) -> Answer<Vec<ScheduleSummary>> {
    Ok(Json(ctx.backend.schedules().await?))
}

async fn get_workers(State(ctx): State<Ctx>) -> Answer<Vec<WorkerSummary>> {
    Ok(Json(ctx.backend.workers().await?))
}

async fn get_types(State(ctx): State<Ctx>) -> Answer<Vec<PublishedType>> {
    Ok(Json(ctx.backend.catalog().await?))
}

async fn get_type(State(ctx): State<Ctx>, Path(name): Path<String>) -> Answer<PublishedType> {
    Ok(Json(ctx.backend.job_type(&name).await?))
}

/// Enqueues a job of the type `name` with the body as its payload: 201 with `{id, duplicate}`.
async fn enqueue(
    State(ctx): State<Ctx>,
    Path(name): Path<String>,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<(StatusCode, Json<Enqueued>), Problem> {
    let Json(payload) = body.map_err(|e| Problem::bad_request(e.body_text()))?;
    let enqueued = ctx.backend.enqueue_json(&name, payload).await?;
    Ok((StatusCode::CREATED, Json(enqueued)))
}

/// What an action on one job answers.
#[derive(Serialize)]
struct Done {
    id: jobs_core::JobId,
    action: &'static str,
}

async fn on_job(action: JobAction, State(ctx): State<Ctx>, Path(id): Path<String>) -> Answer<Done> {
    let id = parse_id(&id)?;
    action.apply(&ctx.backend, id).await?;
    Ok(Json(Done {
        id,
        action: action.name(),
    }))
}

async fn on_queue(
    action: QueueAction,
    State(ctx): State<Ctx>,
    Path(queue): Path<String>,
) -> Answer<Value> {
    action.apply(&ctx.backend, &queue).await?;
    let paused = action == QueueAction::Pause;
    Ok(Json(json!({ "queue": queue, "paused": paused })))
}

async fn on_matching(
    action: BulkAction,
    State(ctx): State<Ctx>,
    body: Result<Json<FilterForm>, JsonRejection>,
) -> Answer<Value> {
    let Json(form) = body.map_err(|e| Problem::bad_request(e.body_text()))?;
    let changed = action.apply(&ctx.backend, &form.to_filter()?).await?;
    Ok(Json(json!({ "changed": changed })))
}
