//! The overview: every queue with its counts by status, throughput, paused state and limits,
//! and pause/resume per queue.

use axum::extract::{Query, State};
use axum::response::Response;
use jobs_core::JobStatus;
use maud::{html, Markup};

use super::NoticeQuery;
use crate::count::thousands;
use crate::filters::FilterForm;
use crate::layout::{dash, respond, Shell};
use crate::prefix::{segment, with_query};
use crate::problem::Problem;
use crate::queues::{queues, QueueView};
use crate::Ctx;

/// The counted statuses, in the table's order.
const COLUMNS: [JobStatus; 7] = [
    JobStatus::Waiting,
    JobStatus::Pending,
    JobStatus::Scheduled,
    JobStatus::Running,
    JobStatus::Completed,
    JobStatus::Dead,
    JobStatus::Cancelled,
];

/// `GET /`.
pub(super) async fn page(
    shell: Shell,
    State(ctx): State<Ctx>,
    Query(q): Query<NoticeQuery>,
) -> Response {
    let page = async {
        let queues = queues(&ctx.backend).await?;
        Ok::<_, Problem>(shell.page(
            "overview",
            "Overview",
            q.notice.as_deref(),
            table(&shell, &queues),
        ))
    };
    respond(&shell, page.await)
}

fn table(shell: &Shell, queues: &[QueueView]) -> Markup {
    html! {
        @if queues.is_empty() {
            p.empty { "No queues yet: enqueue a job and it shows here." }
        } @else {
            table #queues .grid data-live="queues" {
                thead { tr {
                    th { "Queue" }
                    @for status in COLUMNS { th.num { (status) } }
                    th.num title="Finished (completed or cancelled) in the last minute" { "last min" }
                    th.num title="Finished (completed or cancelled) in the last hour" { "last hour" }
                    th { "Paused" }
                    th { "Limits" }
                    @if shell.can_act() { th {} }
                } }
                tbody {
                    @for queue in queues { (row(shell, queue)) }
                }
            }
        }
    }
}

fn row(shell: &Shell, queue: &QueueView) -> Markup {
    let summary = &queue.summary;
    let name = summary.name.as_str();
    let (action, label) = if summary.paused {
        ("resume", "Resume")
    } else {
        ("pause", "Pause")
    };
    html! {
        tr data-queue=(name) {
            td.queue { a href=(with_query("jobs", [("queue", name)])) { (name) } }
            @for status in COLUMNS {
                td.num data-count=(status) {
                    a href=(list_link(name, status)) { (thousands(summary.counts.get(status))) }
                }
            }
            td.num data-count="finished_last_minute" { (thousands(summary.finished_last_minute)) }
            td.num data-count="finished_last_hour" { (thousands(queue.finished_last_hour)) }
            td.paused { @if summary.paused { span.badge.paused { "yes" } } @else { "no" } }
            td.limits {
                @if summary.limits.is_limited() { (summary.limits) } @else { (dash()) }
            }
            @if shell.can_act() {
                td.actions {
                    (shell.action_form(
                        &format!("queues/{}/{action}", segment(name)),
                        &[],
                        html! { button type="submit" class=(action) { (label) } },
                    ))
                }
            }
        }
    }
}

/// The list of `queue`'s jobs in `status`: the dead list for dead ones.
fn list_link(queue: &str, status: JobStatus) -> String {
    let form = FilterForm {
        queue: Some(queue.to_string()),
        ..FilterForm::default()
    };
    match status {
        JobStatus::Dead => with_query("dead", form.fields()),
        status => with_query("jobs", form.with_status(status).fields()),
    }
}
