//! One job: what it is, where it is in its life, its payload, every failed attempt, its
//! result, and the actions its status allows. The script keeps its status and progress live.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use jobs_core::{DeadReason, JobRecord, Operations};
use maud::{html, Markup};

use super::NoticeQuery;
use crate::filters::parse_id;
use crate::layout::{dash, maybe_time, respond, time, Shell};
use crate::prefix::with_query;
use crate::problem::Problem;
use crate::verbs::JobAction;
use crate::Ctx;

/// `GET /jobs/{id}`.
pub(super) async fn page(
    shell: Shell,
    State(ctx): State<Ctx>,
    Path(id): Path<String>,
    Query(q): Query<NoticeQuery>,
) -> Response {
    let page = async {
        let job = ctx.backend.job(parse_id(&id)?).await?;
        let title = format!("{} · {}", job.name, job.id);
        Ok::<_, Problem>(shell.page("job", &title, q.notice.as_deref(), detail(&shell, &job)))
    };
    respond(&shell, page.await)
}

/// A JSON document indented for reading (as stored if it does not parse).
pub(crate) fn pretty(json: &serde_json::value::RawValue) -> String {
    serde_json::from_str::<serde_json::Value>(json.get())
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| json.get().to_string())
}

fn detail(shell: &Shell, job: &JobRecord) -> Markup {
    html! {
        section.job #job data-job=(job.id) data-queue=(job.queue) {
            div.actions {
                @for action in JobAction::ALL {
                    @if action.allowed(job.status) {
                        (shell.action_form(
                            &format!("jobs/{}/{}", job.id, action.name()),
                            &[],
                            html! {
                                button id=(action.name()) type="submit" class=[(action == JobAction::Delete).then_some("danger")] {
                                    (action.name())
                                }
                            },
                        ))
                    }
                }
            }
            dl.facts {
                dt { "Status" } dd { span #job-status class={ "badge status-" (job.status) } { (job.status) } }
                dt { "Progress" } dd { progress max="100" value=(job.progress) {} " " span #job-progress { (job.progress) "%" } }
                dt { "Id" } dd.mono { (job.id) }
                dt { "Name" } dd.mono { (job.name) }
                dt { "Version" } dd #job-version { (job.version) }
                dt { "Queue" } dd { a href=(with_query("jobs", [("queue", &*job.queue)])) { (job.queue) } }
                dt { "Attempt" } dd #job-attempt { (job.attempt) " of " (job.max_attempts) }
                dt { "Priority" } dd { (job.priority) }
                dt { "Backoff" } dd.mono { (job.backoff) }
                dt { "Timeout" } dd { @match job.timeout { Some(t) => { (format!("{t:?}")) }, None => { (dash()) } } }
                dt { "Created" } dd { (time(job.created_at)) }
                dt { "Run at" } dd { (time(job.run_at)) }
                dt { "Started" } dd #job-started { (maybe_time(job.started_at)) }
                dt { "Finished" } dd #job-finished { (maybe_time(job.finished_at)) }
                dt { "Lease" } dd #job-lease {
                    @match &job.lease {
                        Some(lease) => { span.mono { (lease.worker) } ", until " (time(lease.expires_at)) },
                        None => { (dash()) },
                    }
                }
                @if let Some(step) = &job.step {
                    dt { "Workflow" } dd #job-workflow {
                        a.mono href={ "workflows/" (step.workflow) } { (step.workflow) }
                        ", " (super::workflow::place(step.role))
                    }
                }
                dt { "Tags" } dd {
                    @if job.tags.is_empty() { (dash()) }
                    @for tag in &job.tags { a.tag href=(with_query("jobs", [("tag", tag.as_str())])) { (tag) } " " }
                }
                dt { "Unique key" } dd.mono { @match &job.unique_key { Some(k) => { (k) }, None => { (dash()) } } }
                dt { "Key limits" } dd {
                    @match &job.key_limits {
                        Some(limits) => {
                            span.mono { (limits.key) }
                            @if let Some(n) = limits.concurrency { ", concurrency " (n) }
                            @if let Some(rate) = limits.rate { ", rate " (rate) }
                        },
                        None => { (dash()) },
                    }
                }
                @if let Some(reason) = job.dead_reason() {
                    dt { "Dead because" } dd {
                        @match reason {
                            DeadReason::Fatal => "its last error cannot be retried",
                            DeadReason::OutOfAttempts => "every attempt failed",
                        }
                    }
                }
            }
            h2 { "Payload" }
            pre #job-payload .json { (pretty(&job.payload)) }
            h2 { "Attempts" }
            @if job.errors.is_empty() {
                p.empty { "No failed attempt." }
            } @else {
                table #attempts .grid {
                    thead { tr { th.num { "Attempt" } th { "Kind" } th { "Message" } th { "At" } } }
                    tbody {
                        @for error in &job.errors {
                            tr {
                                td.num { (error.attempt) }
                                td.error-kind { span.kind { (error.kind) } }
                                td.error-message {
                                    pre { (error.message) }
                                    @for cause in &error.chain { div.cause { "caused by: " (cause) } }
                                }
                                td { (time(error.at)) }
                            }
                        }
                    }
                }
            }
            h2 { "Result" }
            pre #job-result .json { @match &job.result { Some(r) => { (pretty(r)) }, None => { "—" } } }
        }
    }
}
