//! The actions: on one job (retry, cancel, delete), on every job matching a filter (retry all,
//! delete all) and on a queue (pause, resume); and the HTML form routes that apply them and
//! redirect (303) with a notice. The JSON API applies the same ones.

use axum::extract::rejection::FormRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Form, Router};
use jobs_core::{AnyBackend, Error, JobFilter, JobId, JobRecord, JobStatus, Operations};
use serde::Deserialize;

use crate::count::{count, count_retryable, thousands, Count};
use crate::filters::{parse_id, FilterForm};
use crate::layout::Shell;
use crate::pages::confirm;
use crate::prefix::with_query;
use crate::problem::Problem;
use crate::Ctx;

/// An action on one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobAction {
    /// Back to pending (a dead or cancelled job).
    Retry,
    /// Cancelled (a scheduled, pending or running job).
    Cancel,
    /// Gone for good.
    Delete,
}

impl JobAction {
    /// Every action, for the routes.
    pub(crate) const ALL: [JobAction; 3] = [JobAction::Retry, JobAction::Cancel, JobAction::Delete];

    /// Its name in paths and ids (`retry`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            JobAction::Retry => "retry",
            JobAction::Cancel => "cancel",
            JobAction::Delete => "delete",
        }
    }

    /// Whether it applies to a job in `status`.
    pub(crate) fn allowed(self, status: JobStatus) -> bool {
        match self {
            JobAction::Retry => matches!(status, JobStatus::Dead | JobStatus::Cancelled),
            JobAction::Cancel => status.is_active(),
            JobAction::Delete => true,
        }
    }

    /// Applies it to job `id`.
    pub(crate) async fn apply(self, backend: &AnyBackend, id: JobId) -> Result<(), Error> {
        match self {
            JobAction::Retry => backend.retry(id).await,
            JobAction::Cancel => backend.cancel(id).await,
            JobAction::Delete => backend.delete(id).await,
        }
    }

    fn done(self) -> &'static str {
        match self {
            JobAction::Retry => "Retried",
            JobAction::Cancel => "Cancelled",
            JobAction::Delete => "Deleted",
        }
    }
}

/// An action on every job matching a filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BulkAction {
    /// Retries the matching dead and cancelled jobs.
    RetryAll,
    /// Deletes the matching jobs.
    DeleteAll,
}

impl BulkAction {
    /// Both, for the routes.
    pub(crate) const ALL: [BulkAction; 2] = [BulkAction::RetryAll, BulkAction::DeleteAll];

    /// Its name in paths (`retry-all`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            BulkAction::RetryAll => "retry-all",
            BulkAction::DeleteAll => "delete-all",
        }
    }

    /// Its verb for a person (`Retry`).
    pub(crate) fn verb(self) -> &'static str {
        match self {
            BulkAction::RetryAll => "Retry",
            BulkAction::DeleteAll => "Delete",
        }
    }

    /// How many jobs it would change now (capped, see [`count`]).
    pub(crate) async fn count(
        self,
        backend: &AnyBackend,
        filter: &JobFilter,
    ) -> Result<Count, Error> {
        match self {
            BulkAction::RetryAll => count_retryable(backend, filter).await,
            BulkAction::DeleteAll => count(backend, filter).await,
        }
    }

    /// Applies it to the whole filter, in the store; returns how many jobs changed.
    pub(crate) async fn apply(
        self,
        backend: &AnyBackend,
        filter: &JobFilter,
    ) -> Result<u64, Error> {
        match self {
            BulkAction::RetryAll => backend.retry_all(filter).await,
            BulkAction::DeleteAll => backend.delete_all(filter).await,
        }
    }

    fn done(self) -> &'static str {
        match self {
            BulkAction::RetryAll => "Retried",
            BulkAction::DeleteAll => "Deleted",
        }
    }
}

/// Pausing or resuming a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QueueAction {
    /// Workers take none of its jobs.
    Pause,
    /// Workers take its jobs again.
    Resume,
}

impl QueueAction {
    /// Both, for the routes.
    pub(crate) const ALL: [QueueAction; 2] = [QueueAction::Pause, QueueAction::Resume];

    /// Its name in paths and classes (`pause`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            QueueAction::Pause => "pause",
            QueueAction::Resume => "resume",
        }
    }

    /// Applies it to `queue`.
    pub(crate) async fn apply(self, backend: &AnyBackend, queue: &str) -> Result<(), Error> {
        match self {
            QueueAction::Pause => backend.pause_queue(queue).await,
            QueueAction::Resume => backend.resume_queue(queue).await,
        }
    }
}

/// The form routes: `jobs/{id}/retry|cancel|delete`, `actions/retry-all|delete-all`,
/// `queues/{queue}/pause|resume`.
pub(crate) fn routes() -> Router<Ctx> {
    let mut router = Router::new();
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
        queue: Some(job.queue.clone()),
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
