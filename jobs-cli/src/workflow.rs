//! `workflow ID`: a workflow's state, then one row per step (its compensations last).

use std::fmt::Write as _;

use jobs::{AnyBackend, Operations, StepRole, WorkflowId, WorkflowStatus};

use crate::commands::json;
use crate::format::{self, NONE};
use crate::table::Table;
use crate::Failure;

/// The longest result a row shows.
const RESULT_WIDTH: usize = 30;
/// The longest last error a row shows.
const ERROR_WIDTH: usize = 50;

/// `workflow ID`: the workflow's state and its steps; `--json`: the [`WorkflowStatus`].
pub(crate) async fn workflow(
    backend: &AnyBackend,
    json_out: bool,
    id: WorkflowId,
) -> Result<String, Failure> {
    let status = backend.workflow(id).await?;
    if json_out {
        return json(&status);
    }
    Ok(describe(&status))
}

/// The state on one line, then the table of steps.
fn describe(status: &WorkflowStatus) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "workflow {}: {}", status.id, status.state.as_str());
    let mut table = Table::new([
        "STAGE",
        "NAME",
        "STATUS",
        "ATTEMPT",
        "PROGRESS",
        "RESULT",
        "LAST ERROR",
        "ID",
    ])
    .right(&[4]);
    for step in &status.steps {
        let job = &step.job;
        table.row(vec![
            stage(step.role),
            job.name.to_string(),
            job.status.to_string(),
            format!("{}/{}", job.attempt, job.max_attempts),
            format!("{}%", job.progress),
            job.result
                .as_ref()
                .map_or_else(|| NONE.into(), |r| format::shorten(r.get(), RESULT_WIDTH)),
            job.last_error()
                .map_or_else(|| NONE.into(), |e| format::shorten(&e.message, ERROR_WIDTH)),
            job.id.to_string(),
        ]);
    }
    out.push_str(&table.render());
    out
}

/// The STAGE cell: the stage's number, or `undo N` for the compensation of stage N.
fn stage(role: StepRole) -> String {
    match role {
        StepRole::Step { stage } => stage.to_string(),
        StepRole::Compensation { stage } => format!("undo {stage}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_read_as_numbers_and_compensations_as_undo() {
        assert_eq!(stage(StepRole::Step { stage: 2 }), "2");
        assert_eq!(stage(StepRole::Compensation { stage: 0 }), "undo 0");
        assert_eq!(format::role(StepRole::Step { stage: 1 }), "stage 1");
        assert_eq!(format::role(StepRole::Compensation { stage: 1 }), "undo 1");
    }
}
