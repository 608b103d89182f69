//! The HTML form routes that apply the actions (see `verbs`) or enqueue a job by type, and
//! redirect (303) with a notice.

use axum::extract::rejection::FormRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Form, Router};
use jobs_core::{Error, JobRecord, JobStatus, Operations};
use serde::Deserialize;

use crate::count::thousands;
use crate::filters::{parse_id, FilterForm};
use crate::layout::Shell;
use crate::pages::{confirm, types};
use crate::prefix::with_query;
use crate::problem::Problem;
use crate::verbs::{BulkAction, JobAction, QueueAction};
use crate::Ctx;

/// The form routes: `jobs/{id}/retry|cancel|delete`, `actions/retry-all|delete-all`,
/// `queues/{queue}/pause|resume`, `types/{name}/enqueue`.
pub(crate) fn routes() -> Router<Ctx> {
    let mut router = Router::new().route("/types/{name}/enqueue", post(on_enqueue));
    for action in JobAction::ALL {
        router = router.route(
            &format!("/jobs/{{id}}/{}", action.name()),
            post(move |shell, state, path| on_job(action, shell, state, path)),
        );
    }
    for action in BulkAction::ALL {
        router = router.route(
            &format!("/actions/{}", action.name()),
            post(move |shell, state, form| on_matching(action, shell, state, form)),
        );
    }
    for action in QueueAction::ALL {
        router = router.route(
            &format!("/queues/{{queue}}/{}", action.name()),
            post(move |shell, state, path| on_queue(action, shell, state, path)),
        );
    }
    router
}

/// The list a job belongs on: the dead list for a dead job, else the list of its queue and
/// status.
fn list_of(job: &JobRecord) -> (&'static str, FilterForm) {
    let form = FilterForm {
        queue: Some(job.queue.to_string()),
        ..FilterForm::default()
    };
    match job.status {
        JobStatus::Dead => ("dead", form),
        status => ("jobs", form.with_status(status)),
    }
}

/// `path` with the filter's fields and a notice.
fn target(path: &str, form: &FilterForm, notice: &str) -> String {
    with_query(path, form.fields().into_iter().chain([("notice", notice)]))
}

async fn on_job(
    action: JobAction,
    shell: Shell,
    State(ctx): State<Ctx>,
    Path(id): Path<String>,
) -> Response {
    let applied = async {
        let id = parse_id(&id)?;
        let notice = format!("{} job {id}.", action.done());
        if action == JobAction::Delete {
            let job = ctx.backend.job(id).await?;
            action.apply(&ctx.backend, id).await?;
            let (path, form) = list_of(&job);
            return Ok(target(path, &form, &notice));
        }
        action.apply(&ctx.backend, id).await?;
        Ok::<_, Problem>(with_query(
            &format!("jobs/{id}"),
            [("notice", notice.as_str())],
        ))
    };
    match applied.await {
        Ok(target) => shell.redirect(&target),
        Err(problem) => shell.problem(problem),
    }
}

/// The fields a bulk action posts: the filter, and `confirmed=1` once a person confirmed.
#[derive(Debug, Deserialize)]
struct BulkForm {
    #[serde(flatten)]
    filter: FilterForm,
    #[serde(default)]
    confirmed: Option<String>,
}

async fn on_matching(
    action: BulkAction,
    shell: Shell,
    State(ctx): State<Ctx>,
    form: Result<Form<BulkForm>, FormRejection>,
) -> Response {
    let answer = async {
        let Form(form) = form.map_err(|e| Problem::bad_request(e.body_text()))?;
        let filter = form.filter.to_filter()?;
        if form.confirmed.as_deref() != Some("1") {
            let matching = action.count(&ctx.backend, &filter).await?;
            let page = confirm::page(&shell, action, &form.filter, matching);
            return Ok::<_, Problem>(page.into_response());
        }
        let changed = action.apply(&ctx.backend, &filter).await?;
        let notice = format!(
            "{} {} jobs matching {}.",
            action.done(),
            thousands(changed),
            form.filter.describe()
        );
        let path = match form.filter.status()? {
            Some(JobStatus::Dead) => "dead",
            _ => "jobs",
        };
        Ok(shell.redirect(&target(path, &form.filter, &notice)))
    };
    answer
        .await
        .unwrap_or_else(|problem| shell.problem(problem))
}

async fn on_queue(
    action: QueueAction,
    shell: Shell,
    State(ctx): State<Ctx>,
    Path(queue): Path<String>,
) -> Response {
    match action.apply(&ctx.backend, &queue).await {
        Ok(()) => {
            let done = match action {
                QueueAction::Pause => "Paused",
                QueueAction::Resume => "Resumed",
            };
            let notice = format!("{done} queue {queue}.");
            shell.redirect(&with_query("", [("notice", notice.as_str())]))
        }
        Err(error) => shell.problem(error.into()),
    }
}

/// The fields the enqueue form posts: the payload, as JSON text.
#[derive(Debug, Deserialize)]
struct EnqueueForm {
    #[serde(default)]
    payload: String,
}

/// Enqueues a job of the type `name` with the form's payload, then 303 to the job; a payload
/// that is no JSON or breaks the type's schema stores nothing and shows the form again with
/// the payload and every problem (422).
async fn on_enqueue(
    shell: Shell,
    State(ctx): State<Ctx>,
    Path(name): Path<String>,
    form: Result<Form<EnqueueForm>, FormRejection>,
) -> Response {
    let answer = async {
        let Form(form) = form.map_err(|e| Problem::bad_request(e.body_text()))?;
        let published = ctx.backend.job_type(&name).await?;
        let refused = match serde_json::from_str(&form.payload) {
            Err(e) => Problem::unprocessable(
                format!("The payload is not JSON ({e}); nothing was stored."),
                Vec::new(),
            ),
            Ok(payload) => match ctx.backend.enqueue_json(&name, payload).await {
                Ok(enqueued) => {
                    let notice = if enqueued.duplicate {
                        format!("Job {} already holds the unique key.", enqueued.id)
                    } else {
                        format!("Enqueued job {}.", enqueued.id)
                    };
                    let target = with_query(
                        &format!("jobs/{}", enqueued.id),
                        [("notice", notice.as_str())],
                    );
                    return Ok(shell.redirect(&target));
                }
                Err(Error::InvalidPayload {
                    version, problems, ..
                }) => Problem::unprocessable(
                    format!(
                        "The payload does not match the schema of version {version}; \
                         nothing was stored:"
                    ),
                    problems,
                ),
                Err(error) => return Err(error.into()),
            },
        };
        let page = types::detail(&shell, &published, &form.payload, Some(&refused), None);
        Ok::<_, Problem>((refused.status, page).into_response())
    };
    answer
        .await
        .unwrap_or_else(|problem| shell.problem(problem))
}
