//! The live worker processes: where they run, their queues, and the jobs each is running.

use axum::extract::State;
use axum::response::Response;
use jobs_core::Operations;
use maud::html;

use crate::layout::{dash, respond, time, Shell};
use crate::prefix::with_query;
use crate::problem::Problem;
use crate::Ctx;

/// `GET /workers`.
pub(super) async fn page(shell: Shell, State(ctx): State<Ctx>) -> Response {
    let page = async {
        let workers = ctx.backend.workers().await?;
        let body = html! {
            @if workers.is_empty() {
                p.empty { "No live workers." }
            } @else {
                table #workers .grid {
                    thead { tr {
                        th { "Id" } th { "Host" } th.num { "Pid" } th { "Queues" }
                        th.num { "Concurrency" } th { "Started" } th { "Last seen" } th { "Running" }
                    } }
                    tbody {
                        @for w in &workers {
                            @let info = &w.worker;
                            tr data-worker=(info.id) {
                                td.mono { (info.id) }
                                td { (info.host) }
                                td.num { (info.pid) }
                                td { @for q in &info.queues { a.tag href=(with_query("jobs", [("queue", q.as_str())])) { (q) } " " } }
                                td.num { (info.concurrency) }
                                td { (time(info.started_at)) }
                                td { (time(info.last_seen)) }
                                td.running {
                                    @if w.running.is_empty() { (dash()) }
                                    @for id in &w.running { div { a.job-link.mono href={ "jobs/" (id) } { (id) } } }
                                }
                            }
                        }
                    }
                }
            }
        };
        Ok::<_, Problem>(shell.page("workers", "Workers", None, body))
    };
    respond(&shell, page.await)
}
