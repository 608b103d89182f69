//! The HTML pages, one module each, and their routes.

use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;

use crate::layout::Shell;
use crate::problem::Problem;
use crate::Ctx;

pub(crate) mod confirm;
mod dead;
mod job;
mod jobs;
mod overview;
mod schedules;
pub(crate) mod types;
mod workers;
mod workflow;

/// The pages' routes: `/`, `jobs`, `jobs/{id}`, `workflows/{id}`, `dead`, `schedules`,
/// `workers`, `types`, `types/{name}`.
pub(crate) fn routes() -> Router<Ctx> {
    Router::new()
        .route("/", get(overview::page))
        .route("/jobs", get(jobs::page))
        .route("/jobs/{id}", get(job::page))
        .route("/workflows/{id}", get(workflow::page))
        .route("/dead", get(dead::page))
        .route("/schedules", get(schedules::page))
        .route("/workers", get(workers::page))
        .route("/types", get(types::list))
        .route("/types/{name}", get(types::page))
}

/// What a path no route matches answers: a 404 page, or the API's JSON error under `api/`.
pub(crate) async fn not_found(shell: Shell, uri: Uri) -> Response {
    let problem = Problem::not_found(format!("nothing here: {}", uri.path()));
    if uri.path().starts_with("/api/") {
        problem.into_response()
    } else {
        shell.problem(problem)
    }
}

/// The query of a page that shows a notice after an action.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct NoticeQuery {
    /// What the action did.
    #[serde(default)]
    notice: Option<String>,
}
