//! The cron schedules workers recorded: expression, time zone, queue, last and next ticks.

use axum::extract::State;
use axum::response::Response;
use jobs_core::Operations;
use maud::html;

use crate::layout::{maybe_time, respond, time, Shell};
use crate::prefix::with_query;
use crate::problem::Problem;
use crate::Ctx;

/// `GET /schedules`.
pub(super) async fn page(shell: Shell, State(ctx): State<Ctx>) -> Response {
    let page = async {
        let schedules = ctx.backend.schedules().await?;
        let body = html! {
            @if schedules.is_empty() {
                p.empty { "No schedules: a worker records the cron schedules it runs." }
            } @else {
                table #schedules .grid {
                    thead { tr {
                        th { "Name" } th { "Cron" } th { "Time zone" } th { "Queue" }
                        th { "Last tick" } th { "Next ticks" } th { "Recorded" }
                    } }
                    tbody {
                        @for s in &schedules {
                            @let info = &s.schedule;
                            tr data-schedule=(info.name) {
                                td.mono { a href=(with_query("jobs", [("name", info.name.as_str())])) { (info.name) } }
                                td.mono { (info.expression) }
                                td { (info.timezone) }
                                td { (info.queue) }
                                td { (maybe_time(s.last_tick)) }
                                td.ticks { @for tick in &s.next { div { (time(*tick)) } } }
                                td { (time(s.seen_at)) }
                            }
                        }
                    }
                }
            }
        };
        Ok::<_, Problem>(shell.page("schedules", "Schedules", None, body))
    };
    respond(&shell, page.await)
}
