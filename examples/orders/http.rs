//! The HTTP API: `POST /orders` answers `202 Accepted` at once, `GET /orders/{id}` shows each
//! step, and `GET /orders/{id}/events` streams the order's progress as server-sent events.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::stream::{self, Stream};
use jobs::{AnyBackend, Operations, Received, WorkflowState, WorkflowStatus};
use serde::{Deserialize, Serialize};

use crate::shop::{Shop, StoredOrder};

/// What the handlers share.
#[derive(Clone)]
pub(crate) struct App {
    pub(crate) backend: AnyBackend,
    pub(crate) shop: Shop,
}

/// The routes.
pub(crate) fn router(app: App) -> Router {
    Router::new()
        .route("/orders", post(place))
        .route("/orders/{id}", get(show))
        .route("/orders/{id}/events", get(events))
        .with_state(app)
}

/// The body of `POST /orders`.
#[derive(Deserialize)]
struct NewOrder {
    items: u32,
    card: String,
}

/// What `POST /orders` answers.
#[derive(Serialize)]
struct Accepted {
    order: String,
    workflow: String,
    status: String,
    events: String,
}

/// An error as `{ "error": … }` with its status.
fn problem(status: StatusCode, error: impl std::fmt::Display) -> Response {
    let body = serde_json::json!({ "error": error.to_string() });
    (status, Json(body)).into_response()
}

fn failed(e: jobs::Error) -> Response {
    match e {
        jobs::Error::QueueFull { .. } => problem(StatusCode::SERVICE_UNAVAILABLE, e),
        jobs::Error::Invalid(_) => problem(StatusCode::UNPROCESSABLE_ENTITY, e),
        _ => problem(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// `POST /orders`: stores the order and its workflow in one transaction and answers 202 with
/// the order's `Location`. A request repeating an `Idempotency-Key` gets the first request's
/// answer, and no second order.
async fn place(State(app): State<App>, headers: HeaderMap, Json(new): Json<NewOrder>) -> Response {
    let key = match headers.get("idempotency-key").map(|v| v.to_str()) {
        None => None,
        Some(Ok(key)) if !key.is_empty() && key.len() <= 255 => Some(key.to_string()),
        Some(_) => {
            return problem(
                StatusCode::BAD_REQUEST,
                "Idempotency-Key must be 1 to 255 visible ASCII characters",
            )
        }
    };
    let placed = match app.shop.place(&app.backend, new.items, new.card, key).await {
        Ok(placed) => placed,
        Err(e) => return failed(e),
    };
    let id = &placed.order.id;
    let location = format!("/orders/{id}");
    let body = Accepted {
        order: id.clone(),
        workflow: placed.order.workflow.to_string(),
        status: location.clone(),
        events: format!("{location}/events"),
    };
    let replayed = if placed.created { "false" } else { "true" };
    (
        StatusCode::ACCEPTED,
        [
            (header::LOCATION.as_str(), location),
            ("idempotent-replayed", replayed.to_string()),
        ],
        Json(body),
    )
        .into_response()
}

/// One step as `GET /orders/{id}` shows it.
#[derive(Serialize)]
struct StepView {
    name: String,
    role: jobs::StepRole,
    job: String,
    status: jobs::JobStatus,
    attempt: u32,
    progress: u8,
    result: Option<serde_json::Value>,
    error: Option<String>,
}

/// What `GET /orders/{id}` answers.
#[derive(Serialize)]
struct OrderView {
    order: StoredOrder,
    state: WorkflowState,
    steps: Vec<StepView>,
    effects: Vec<&'static str>,
}

async fn view(app: &App, id: &str) -> Result<Option<(OrderView, WorkflowStatus)>, jobs::Error> {
    let Some(order) = app.shop.order(id).await? else {
        return Ok(None);
    };
    let status = app.backend.workflow(order.workflow).await?;
    let steps = status
        .steps
        .iter()
        .map(|s| StepView {
            name: s.job.name.to_string(),
            role: s.role,
            job: s.job.id.to_string(),
            status: s.job.status,
            attempt: s.job.attempt,
            progress: s.job.progress,
            result: s
                .job
                .result
                .as_ref()
                .and_then(|r| serde_json::from_str(r.get()).ok()),
            error: s.job.last_error().map(|e| e.message.clone()),
        })
        .collect();
    let effects = app.shop.effects(id).await?;
    let view = OrderView {
        order,
        state: status.state,
        steps,
        effects,
    };
    Ok(Some((view, status)))
}

/// `GET /orders/{id}`: the order, its workflow's state, each step's status, progress and
/// result, and the side effects recorded.
async fn show(State(app): State<App>, Path(id): Path<String>) -> Response {
    match view(&app, &id).await {
        Ok(Some((view, _))) => Json(view).into_response(),
        Ok(None) => problem(StatusCode::NOT_FOUND, format!("no order {id}")),
        Err(e) => failed(e),
    }
}

/// `GET /orders/{id}/events`: an `order` event with the order's view at once and each time a
/// step changes (woken by the store's job events, read again every second in any case), until
/// the workflow has ended.
async fn events(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Response> {
    if app.shop.order(&id).await.map_err(failed)?.is_none() {
        return Err(problem(StatusCode::NOT_FOUND, format!("no order {id}")));
    }
    let listen = app
        .backend
        .job_events(&["orders", "email", "pdf"])
        .await
        .map_err(failed)?;
    let start = Watch {
        app,
        id,
        listen,
        last: None,
        ended: false,
    };
    Ok(Sse::new(stream::unfold(start, Watch::next)).keep_alive(KeepAlive::default()))
}

/// The state of one order's event stream.
struct Watch {
    app: App,
    id: String,
    listen: jobs::EventStream,
    /// The last view sent, as JSON.
    last: Option<String>,
    ended: bool,
}

impl Watch {
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Watch)> {
        if self.ended {
            return None;
        }
        loop {
            let (data, state) = match view(&self.app, &self.id).await {
                Ok(Some((view, status))) => (
                    serde_json::to_string(&view).unwrap_or_default(),
                    status.state,
                ),
                Ok(None) => return None,
                Err(e) => {
                    let event = Event::default().event("error").data(e.to_string());
                    self.ended = true;
                    return Some((Ok(event), self));
                }
            };
            if self.last.as_deref() != Some(data.as_str()) {
                self.ended = !matches!(state, WorkflowState::Running | WorkflowState::Compensating);
                self.last = Some(data.clone());
                return Some((Ok(Event::default().event("order").data(data)), self));
            }
            // Wait for a job event (any step of any order: cheap to read again) or a second.
            let _ = tokio::time::timeout(Duration::from_secs(1), async {
                loop {
                    match self.listen.recv().await {
                        Some(Received::Event(_)) | Some(Received::Missed) => return,
                        None => std::future::pending::<()>().await,
                    }
                }
            })
            .await;
        }
    }
}
