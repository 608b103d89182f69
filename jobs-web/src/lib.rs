//! The web dashboard of `jobs`: an axum [`Router`] that shows the queues, the jobs, the
//! dead-letter set, the cron schedules, the live workers and the catalog of job types of any
//! backend, and retries, cancels, deletes, pauses and enqueues by type, for a service to nest under any path behind its own auth.
//!
//! Server-rendered HTML (escaped by construction), one embedded stylesheet and one small
//! script that keeps counts and a job's state live; every action works without the script.
//!
//! ```
//! use axum::Router;
//! use jobs_core::MemoryBackend;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let backend = MemoryBackend::new();
//! // Nested under `/ops/jobs`, behind whatever auth the service's router applies.
//! let app: Router = Router::new()
//!     .nest("/ops/jobs", jobs_web::router(backend.clone()))
//!     .nest("/view/jobs", jobs_web::Dashboard::new(backend).read_only(true).router());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! let serving = tokio::spawn(async move { axum::serve(listener, app).await });
//! serving.abort();
//! # });
//! ```
//!
//! # Pages
//! Relative to where the router is nested (every page carries `<base href="{prefix}/">` and
//! only relative links, so any prefix works):
//!
//! | route | what |
//! | --- | --- |
//! | `GET /` | every queue: counts by status (waiting workflow steps first), finished in the last minute and hour, paused, limits; pause/resume |
//! | `GET jobs?queue=&status=&name=&tag=&since=&after=` | the matching jobs, oldest first, 50 a page (`after`: the previous page's last id) |
//! | `GET jobs/{id}` | one job: payload and its version, attempts and their errors, progress, result, timings, lease, its workflow (a link) for a workflow step; retry, cancel, delete |
//! | `GET workflows/{id}` | one workflow: its state (running, completed, compensating, failed, cancelled) and each step and compensation (stage or `undo N`, name linking to the job, status, attempt, progress, result, last error), kept live |
//! | `GET dead?queue=&name=&tag=&since=` | the dead-letter set, with retry/delete per job and retry/delete all matching |
//! | `GET schedules`, `GET workers` | the cron schedules; the live workers and what each is running |
//! | `GET types` | the catalog of job types workers published: name, version, queue, attempts, when published |
//! | `GET types/{name}` | a type's newest version: its defaults, the JSON Schema of its payload, and a form to enqueue a job of it with a JSON payload |
//! | `POST jobs/{id}/retry`, `…/cancel`, `…/delete` | the action, then 303 to the job (to its list after delete) |
//! | `POST actions/retry-all`, `actions/delete-all` | with the filter fields: a page saying how many jobs match, whose form posts again with `confirmed=1` to apply the action to the whole filter |
//! | `POST queues/{queue}/pause`, `…/resume` | the action, then 303 to the overview |
//! | `POST types/{name}/enqueue` with the field `payload` (JSON text) | a job of the type's newest version with its defaults, then 303 to the job; a payload that is no JSON or breaks the schema stores nothing and shows the form again, payload kept, with every problem (422) |
//!
//! `since` is an RFC 3339 time or a span back from now (`90s`, `15m`, `2h`, `7d`).
//!
//! # JSON API
//! Under `api/`, for the pages' script and for scripts:
//!
//! | route | answers |
//! | --- | --- |
//! | `GET api/queues` | `[{name, counts: {waiting, scheduled, pending, running, completed, dead, cancelled}, paused, finished_last_minute, finished_last_hour, limits}]` |
//! | `GET api/jobs?queue=&status=&name=&tag=&since=&after=&limit=` | `{jobs: [job], next: id or null}`, oldest first, `limit` 50 unless told (at most 1,000) |
//! | `GET api/jobs/{id}` | the job: `{id, name, queue, payload, status, attempt, max_attempts, errors: [{attempt, at, kind, message}], progress, result, lease, tags, …}` |
//! | `GET api/workflows/{id}` | the workflow: `{id, state, steps: [{role: {role: "step" or "compensation", stage}, job}]}`, steps then compensations in plan order, `state` one of running, completed, compensating, failed, cancelled |
//! | `GET api/count?queue=&status=&name=&tag=&since=` | `{count, capped}`: how many jobs match, counted up to 100,000 (`capped`: that many or more) |
//! | `GET api/schedules` | `[{schedule: {name, queue, expression, timezone}, last_tick, next: [time], seen_at}]` |
//! | `GET api/workers` | `[{worker: {id, host, pid, queues, concurrency, names, started_at, last_seen}, running: [id]}]` |
//! | `GET api/types` | `[{info: {name, version, queue, max_attempts, priority, backoff, timeout, tags, schema}, published_at}]`, every published version, by name then version |
//! | `GET api/types/{name}` | the newest published version of the type, as above |
//! | `GET api/csrf` | `{token}`: the token every POST carries |
//! | `GET api/events?queue=` | server-sent events: `event: job` with `{id, name, queue, kind, percent?, attempt, error?, retry_at?, at}` (kind: enqueued, started, progress, completed, failed, dead), and `event: missed` when some may have been missed |
//! | `POST api/jobs/{id}/retry`, `…/cancel`, `…/delete` | `{id, action}` |
//! | `POST api/queues/{queue}/pause`, `…/resume` | `{queue, paused}` |
//! | `POST api/retry-all`, `api/delete-all` with a JSON filter `{queue?, status?, name?, tag?, since?}` | `{changed}`: how many jobs the action changed |
//! | `POST api/types/{name}/enqueue` with the payload as the JSON body | 201 with `{id, duplicate}`: a job of the type's newest version with its defaults, due now |
//!
//! Errors answer `{"error": "..."}`: 400 for bad input (a malformed id, an unknown status, a bad
//! time or body), 403 for a refused write, 404 for an unknown job, workflow or job type, 409 for an action
//! the job's status does not allow (or a unique key another job holds), and 422 with
//! `{"error": "...", "problems": ["..."]}` for a payload that breaks its type's schema, each
//! problem saying where and how (nothing is stored).
//!
//! ```sh
//! token=$(curl -s localhost:8080/api/csrf | jq -r .token)
//! curl -s -X POST -H "x-csrf-token: $token" -H 'content-type: application/json' \
//!      -d '{"queue": "email", "status": "dead"}' localhost:8080/api/retry-all
//! curl -s -X POST -H "x-csrf-token: $token" -H 'content-type: application/json' \
//!      -d '{"user_id": 123, "email": "alice@example.com"}' \
//!      localhost:8080/api/types/send_welcome_email/enqueue
//! ```
//!
//! # Safety
//! Every POST, from a form or the API, must carry the dashboard's token (made at random for
//! each [`Dashboard`]): the form field `csrf`, which every page's forms hold, or the header
//! `x-csrf-token` (the pages also show it in `<meta name="csrf-token">`). A request whose
//! `Sec-Fetch-Site` is `cross-site` is refused too. With [`Dashboard::read_only`], no action
//! is shown and every POST answers 403. Payloads, schemas, error texts, names and tags are
//! escaped.

use std::sync::Arc;

use axum::Router;
use jobs_core::{AnyBackend, Backend};

mod actions;
mod api;
mod assets;
mod count;
mod csrf;
mod events;
mod filters;
mod layout;
mod pages;
mod prefix;
mod problem;
mod queues;
mod verbs;

/// What every handler shares: the backend, the mode and the CSRF token.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub(crate) backend: AnyBackend,
    pub(crate) read_only: bool,
    pub(crate) csrf: Arc<str>,
}

/// The dashboard for `backend`, with every action: `Router::nest("/jobs", router(backend))`.
pub fn router(backend: impl Backend) -> Router {
    Dashboard::new(backend).router()
}

/// A dashboard and its options: `Dashboard::new(backend).read_only(true).router()`.
#[derive(Clone, Debug)]
pub struct Dashboard {
    backend: AnyBackend,
    read_only: bool,
}

impl Dashboard {
    /// A dashboard for `backend`, with every action.
    pub fn new(backend: impl Backend) -> Self {
        Dashboard {
            backend: AnyBackend::new(backend),
            read_only: false,
        }
    }

    /// With `true`, no action is shown and every POST answers 403.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// The router, to serve or to nest (`Router::nest("/jobs", dashboard.router())`), with a
    /// CSRF token of its own.
    pub fn router(self) -> Router {
        let ctx = Ctx {
            backend: self.backend,
            read_only: self.read_only,
            csrf: uuid::Uuid::new_v4().to_string().into(),
        };
        Router::new()
            .merge(pages::routes())
            .merge(actions::routes())
            .merge(api::routes())
            .merge(assets::routes())
            .fallback(pages::not_found)
            .layer(axum::middleware::from_fn_with_state(
                ctx.clone(),
                csrf::guard,
            ))
            .with_state(ctx)
    }
}
