//! One workflow: its state, then each step and compensation with its job's status, attempt,
//! progress, result and last error, each linking to its job. The script keeps it live.

use axum::extract::{Path, State};
use axum::response::Response;
use jobs_core::workflow::StepRole;
use jobs_core::{Operations, WorkflowStatus};
use maud::{html, Markup};

use crate::filters::parse_workflow_id;
use crate::layout::{badge, dash, respond, Shell};
use crate::problem::Problem;
use crate::Ctx;

/// The characters of a result shown in a row.
const RESULT_PREVIEW: usize = 80;
/// The characters of a last error shown in a row.
const ERROR_PREVIEW: usize = 120;

/// `GET /workflows/{id}`.
pub(super) async fn page(shell: Shell, State(ctx): State<Ctx>, Path(id): Path<String>) -> Response {
    let page = async {
        let status = ctx.backend.workflow(parse_workflow_id(&id)?).await?;
        let title = format!("Workflow {}", status.id);
        Ok::<_, Problem>(shell.page("workflow", &title, None, detail(&status)))
    };
    respond(&shell, page.await)
}

/// A step's place: `stage N`, or `undo N` for the compensation of stage N.
pub(crate) fn place(role: StepRole) -> String {
    match role {
        StepRole::Step { stage } => format!("stage {stage}"),
        StepRole::Compensation { stage } => format!("undo {stage}"),
    }
}

/// The first `n` characters of `text`, with `…` when cut.
fn preview(text: &str, n: usize) -> String {
    let mut cut: String = text.chars().take(n).collect();
    if text.chars().nth(n).is_some() {
        cut.push('…');
    }
    cut
}

fn detail(status: &WorkflowStatus) -> Markup {
    let state = status.state.as_str();
    html! {
        section.workflow #workflow data-workflow=(status.id) {
            dl.facts {
                dt { "State" } dd { span #workflow-state class={ "badge state-" (state) } { (state) } }
                dt { "Id" } dd.mono { (status.id) }
                dt { "Steps" } dd { (status.steps.len()) }
            }
            table #steps .grid {
                thead { tr {
                    th { "Stage" } th { "Name" } th { "Status" } th.num { "Attempt" }
                    th.num { "Progress" } th { "Result" } th { "Last error" }
                } }
                tbody {
                    @for step in &status.steps {
                        @let job = &step.job;
                        tr data-job=(job.id) {
                            td.stage { (place(step.role)) }
                            td.name { a.job-link.mono href={ "jobs/" (job.id) } { (job.name) } }
                            td.status { (badge(job.status)) }
                            td.num.attempt { (job.attempt) "/" (job.max_attempts) }
                            td.num.progress { (job.progress) "%" }
                            td.result {
                                @match &job.result {
                                    Some(r) => { code { (preview(r.get(), RESULT_PREVIEW)) } },
                                    None => { (dash()) },
                                }
                            }
                            td.error-preview {
                                @match job.last_error() {
                                    Some(e) => { (preview(&e.message, ERROR_PREVIEW)) },
                                    None => { (dash()) },
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_places_read_as_words() {
        assert_eq!(place(StepRole::Step { stage: 1 }), "stage 1");
        assert_eq!(place(StepRole::Compensation { stage: 0 }), "undo 0");
        assert_eq!(preview("abcdef", 3), "abc…");
        assert_eq!(preview("abc", 3), "abc");
    }
}
