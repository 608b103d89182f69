//! The catalog of job types that workers published: the list, and one type's page with its
//! defaults, the JSON Schema of its payload and, unless read-only, a form that enqueues a job
//! of it with a JSON payload (posted to `types/{name}/enqueue`, see `actions`).

use axum::extract::{Path, Query, State};
use axum::response::Response;
use jobs_core::{Operations, PublishedType};
use maud::{html, Markup};

use super::NoticeQuery;
use crate::layout::{ago, dash, respond, Shell};
use crate::prefix::{segment, with_query};
use crate::problem::Problem;
use crate::Ctx;

/// What the form holds before anything was typed.
const EMPTY_PAYLOAD: &str = "{}";

/// `GET /types`.
pub(super) async fn list(shell: Shell, State(ctx): State<Ctx>) -> Response {
    let page = async {
        let catalog = ctx.backend.catalog().await?;
        let body = html! {
            @if catalog.is_empty() {
                p.empty { "No job types: a worker publishes the types it runs when it starts." }
            } @else {
                table #types .grid {
                    thead { tr {
                        th { "Name" } th.num { "Version" } th { "Queue" } th.num { "Attempts" }
                        th { "Published" }
                    } }
                    tbody {
                        @for t in &catalog {
                            @let info = &t.info;
                            tr data-type=(info.name) data-version=(info.version) {
                                td.mono { a.type-link href=(type_path(&info.name)) { (info.name) } }
                                td.num { (info.version) }
                                td { a href=(with_query("jobs", [("queue", info.queue.as_str())])) { (info.queue) } }
                                td.num { (info.max_attempts) }
                                td { (ago(t.published_at)) }
                            }
                        }
                    }
                }
            }
        };
        Ok::<_, Problem>(shell.page("types", "Job types", None, body))
    };
    respond(&shell, page.await)
}

/// `GET /types/{name}`: the newest published version.
pub(super) async fn page(
    shell: Shell,
    State(ctx): State<Ctx>,
    Path(name): Path<String>,
    Query(q): Query<NoticeQuery>,
) -> Response {
    let page = async {
        let published = ctx.backend.job_type(&name).await?;
        Ok::<_, Problem>(detail(
            &shell,
            &published,
            EMPTY_PAYLOAD,
            None,
            q.notice.as_deref(),
        ))
    };
    respond(&shell, page.await)
}

/// The page of a job type, relative to the dashboard.
pub(crate) fn type_path(name: &str) -> String {
    format!("types/{}", segment(name))
}

/// The page of `published`, its form holding `payload`; after a refused enqueue, `refused`
/// says why (every problem listed).
pub(crate) fn detail(
    shell: &Shell,
    published: &PublishedType,
    payload: &str,
    refused: Option<&Problem>,
    notice: Option<&str>,
) -> Markup {
    let info = &published.info;
    let body = html! {
        section.job-type #job-type data-type=(info.name) data-version=(info.version) {
            dl.facts {
                dt { "Name" } dd.mono { a href=(with_query("jobs", [("name", info.name.as_str())])) { (info.name) } }
                dt { "Version" } dd #type-version { (info.version) }
                dt { "Queue" } dd { a href=(with_query("jobs", [("queue", info.queue.as_str())])) { (info.queue) } }
                dt { "Attempts" } dd { (info.max_attempts) }
                dt { "Priority" } dd { (info.priority) }
                dt { "Backoff" } dd.mono { (info.backoff) }
                dt { "Timeout" } dd { @match info.timeout { Some(t) => { (format!("{t:?}")) }, None => { (dash()) } } }
                dt { "Tags" } dd {
                    @if info.tags.is_empty() { (dash()) }
                    @for tag in &info.tags { a.tag href=(with_query("jobs", [("tag", tag.as_str())])) { (tag) } " " }
                }
                dt { "Published" } dd { (ago(published.published_at)) }
            }
            h2 { "Payload schema" }
            @match &info.schema {
                Some(schema) => {
                    pre #type-schema .json {
                        (serde_json::to_string_pretty(schema).unwrap_or_else(|_| schema.to_string()))
                    }
                },
                None => { p.empty #type-schema { "No schema: payloads are not checked." } },
            }
            @if shell.can_act() {
                h2 { "Enqueue" }
                (enqueue_form(shell, info.name.as_str(), payload, refused))
            }
        }
    };
    shell.page("type", &info.name, notice, body)
}

/// The form that enqueues a job of `name` with the JSON typed in it.
fn enqueue_form(shell: &Shell, name: &str, payload: &str, refused: Option<&Problem>) -> Markup {
    html! {
        @if let Some(problem) = refused {
            div #enqueue-problems .error role="alert" {
                p { (problem.message) }
                @if !problem.problems.is_empty() {
                    ul { @for p in &problem.problems { li { (p) } } }
                }
            }
        }
        form #enqueue .enqueue method="post" action={ (type_path(name)) "/enqueue" } {
            input type="hidden" name="csrf" value=(shell.token());
            label {
                span { "Payload (JSON)" }
                textarea #payload .mono name="payload" rows="10" spellcheck="false" { (payload) }
            }
            button #enqueue-submit type="submit" { "Enqueue" }
        }
    }
}
