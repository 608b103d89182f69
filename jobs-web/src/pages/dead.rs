//! The dead-letter set: the list filtered to dead jobs, with retry and delete per job and
//! "retry all matching" / "delete all matching" (confirmed first, see [`super::confirm`]).

use axum::extract::{Query, State};
use axum::response::Response;
use jobs_core::JobStatus;
use maud::html;

use super::jobs::{filters_form, load, next_link, table, ListQuery};
use crate::layout::{respond, Shell};
use crate::problem::Problem;
use crate::verbs::BulkAction;
use crate::Ctx;

/// `GET /dead`.
pub(super) async fn page(
    shell: Shell,
    State(ctx): State<Ctx>,
    Query(q): Query<ListQuery>,
) -> Response {
    let page = async {
        let form = q.filter.with_status(JobStatus::Dead);
        let found = load(&ctx, &form, q.after.as_deref()).await?;
        let body = html! {
            (filters_form("dead", &q.filter, false))
            @if shell.can_act() {
                div.bulk {
                    @for action in BulkAction::ALL {
                        (shell.action_form(
                            &format!("actions/{}", action.name()),
                            &form.fields(),
                            html! {
                                button #(action.name()) type="submit" class=[(action == BulkAction::DeleteAll).then_some("danger")] {
                                    (action.verb()) " all matching"
                                }
                            },
                        ))
                    }
                }
            }
            (table(&shell, &found.jobs, true))
            (next_link("dead", &q.filter, &found))
        };
        Ok::<_, Problem>(shell.page("dead", "Dead jobs", q.notice.as_deref(), body))
    };
    respond(&shell, page.await)
}
