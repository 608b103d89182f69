//! The confirmation of a bulk action: how many jobs match, and a form that posts the same
//! filter again with `confirmed=1`.

use maud::{html, Markup};

use crate::count::Count;
use crate::filters::FilterForm;
use crate::layout::Shell;
use crate::prefix::with_query;
use crate::verbs::BulkAction;

/// The page asking to confirm `action` on the `matching` jobs of `form`.
pub(crate) fn page(
    shell: &Shell,
    action: BulkAction,
    form: &FilterForm,
    matching: Count,
) -> Markup {
    let which = match (action, form.status()) {
        (BulkAction::RetryAll, Ok(None)) => "dead or cancelled ".to_string(),
        (_, Ok(Some(status))) => format!("{status} "),
        _ => String::new(),
    };
    let back = match form.status() {
        Ok(Some(jobs_core::JobStatus::Dead)) => "dead",
        _ => "jobs",
    };
    let mut fields = form.fields().to_vec();
    fields.push(("confirmed", "1"));
    let body = html! {
        p.confirm {
            (action.verb()) " "
            span #confirm-count { (matching.count) }
            @if matching.capped { " or more" }
            " " (which) @if matching.count == 1 { "job" } @else { "jobs" }
            " matching " code { (form.describe()) } "?"
        }
        @if matching.capped {
            p.hint { "Counting stops at " (matching.describe()) "; the action applies to every matching job." }
        }
        div.bulk {
            (shell.action_form(
                &format!("actions/{}", action.name()),
                &fields,
                html! {
                    button #confirm type="submit" class=[(action == BulkAction::DeleteAll).then_some("danger")] {
                        (action.verb()) " " (matching.describe()) " " @if matching.count == 1 { "job" } @else { "jobs" }
                    }
                },
            ))
            a.cancel href=(with_query(back, form.fields())) { "Cancel" }
        }
    };
    shell.page(
        "confirm",
        &format!("{} all matching?", action.verb()),
        None,
        body,
    )
}
