//! The job list: the filters form, a page of matching jobs (oldest first, as the store gives
//! them) and a link to the next page. Its table and form serve the dead list too.

use axum::extract::{Query, State};
use axum::response::Response;
use jobs_core::{JobRecord, JobStatus, Operations, Page, PageRequest};
use maud::{html, Markup};
use serde::Deserialize;

use crate::filters::{parse_after, FilterForm};
use crate::layout::{badge, dash, maybe_time, respond, time, Shell};
use crate::prefix::with_query;
use crate::problem::Problem;
use crate::verbs::JobAction;
use crate::Ctx;

/// Jobs per page of a list.
const PAGE_SIZE: usize = 50;
/// The characters of the last error shown in a list.
const ERROR_PREVIEW: usize = 120;

/// The query of a list: the filter, the cursor, and the notice after an action.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ListQuery {
    #[serde(flatten)]
    pub(super) filter: FilterForm,
    #[serde(default)]
    pub(super) after: Option<String>,
    #[serde(default)]
    pub(super) notice: Option<String>,
}

/// `GET /jobs`.
pub(super) async fn page(
    shell: Shell,
    State(ctx): State<Ctx>,
    Query(q): Query<ListQuery>,
) -> Response {
    let page = async {
        let found = load(&ctx, &q.filter, q.after.as_deref()).await?;
        let body = html! {
            (filters_form("jobs", &q.filter, true))
            (table(&shell, &found.jobs, false))
            (next_link("jobs", &q.filter, &found))
        };
        Ok::<_, Problem>(shell.page("jobs", "Jobs", q.notice.as_deref(), body))
    };
    respond(&shell, page.await)
}

/// The page of jobs matching `form` after the cursor `after`.
pub(super) async fn load(
    ctx: &Ctx,
    form: &FilterForm,
    after: Option<&str>,
) -> Result<Page, Problem> {
    let filter = form.to_filter()?;
    let page = PageRequest {
        after: parse_after(after)?,
        limit: PAGE_SIZE,
    };
    Ok(ctx.backend.jobs(&filter, page).await?)
}

/// The filters form, submitting to `action`; without the status field on the dead list.
pub(super) fn filters_form(action: &str, form: &FilterForm, with_status: bool) -> Markup {
    let [(_, queue), (_, status), (_, name), (_, tag), (_, since)] = form.fields();
    html! {
        form #filters .filters method="get" action=(action) {
            label { span { "Queue" } input name="queue" value=(queue) placeholder="any"; }
            @if with_status {
                label {
                    span { "Status" }
                    input name="status" value=(status) list="statuses" placeholder="any";
                }
                datalist #statuses { @for s in JobStatus::ALL { option value=(s) {} } }
            }
            label { span { "Name" } input name="name" value=(name) placeholder="any"; }
            label { span { "Tag" } input name="tag" value=(tag) placeholder="any"; }
            label {
                span { "Since" }
                input name="since" value=(since) placeholder="2h, 7d or a time" title="An RFC 3339 time, or a span back from now: 90s, 15m, 2h, 7d";
            }
            button #apply type="submit" { "Apply" }
            a.reset href=(action) { "Reset" }
        }
    }
}

/// The table of `jobs`; with `row_actions`, a retry and a delete button per row.
pub(super) fn table(shell: &Shell, jobs: &[JobRecord], row_actions: bool) -> Markup {
    let actions = row_actions && shell.can_act();
    html! {
        @if jobs.is_empty() {
            p.empty { "No jobs match." }
        } @else {
            table #jobs .grid {
                thead { tr {
                    th { "Id" } th { "Name" } th { "Queue" } th { "Status" }
                    th.num { "Attempt" } th { "Created" } th { "Finished" } th { "Last error" }
                    @if actions { th {} }
                } }
                tbody {
                    @for job in jobs {
                        tr data-job=(job.id) {
                            td.id { a.job-link.mono href={ "jobs/" (job.id) } { (job.id) } }
                            td { (job.name) }
                            td { (job.queue) }
                            td.status { (badge(job.status)) }
                            td.num { (job.attempt) "/" (job.max_attempts) }
                            td { (time(job.created_at)) }
                            td { (maybe_time(job.finished_at)) }
                            td.error-preview {
                                @match job.last_error() {
                                    Some(e) => { (e.message.chars().take(ERROR_PREVIEW).collect::<String>()) },
                                    None => { (dash()) },
                                }
                            }
                            @if actions {
                                td.actions {
                                    @for action in [JobAction::Retry, JobAction::Delete] {
                                        @if action.allowed(job.status) {
                                            (shell.action_form(
                                                &format!("jobs/{}/{}", job.id, action.name()),
                                                &[],
                                                html! { button type="submit" class=(action.name()) { (action.name()) } },
                                            ))
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The link to the page after `page`, with the same filter; nothing on the last page.
pub(super) fn next_link(path: &str, form: &FilterForm, page: &Page) -> Markup {
    html! {
        @if let Some(next) = page.next {
            @let cursor = next.to_string();
            nav.paging {
                a #next-page href=(with_query(path, form.fields().into_iter().chain([("after", cursor.as_str())]))) { "Next page →" }
            }
        }
    }
}
