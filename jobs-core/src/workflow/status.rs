//! A workflow's status, read from any process: each step's job, and what they add up to.

use serde::{Deserialize, Serialize};

use crate::backend::{Backend, ListParams};
use crate::error::Error;
use crate::filter::JobFilter;
use crate::model::JobRecord;
use crate::status::JobStatus;
use crate::workflow::step::{StepRole, WorkflowId};

/// The most steps (with compensations) one workflow is read with.
pub const MAX_STEPS: usize = 1_000;

/// Where a workflow is, and each of its steps.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkflowStatus {
    /// The workflow.
    pub id: WorkflowId,
    /// What its steps add up to.
    pub state: WorkflowState,
    /// Its steps and then its compensations, in plan order.
    pub steps: Vec<WorkflowStep>,
}

/// One step of a workflow: its role and its job (status, progress, result, errors).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkflowStep {
    /// A step of a stage, or a compensation.
    pub role: StepRole,
    /// The step's job.
    pub job: JobRecord,
}

/// What a workflow's steps add up to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowState {
    /// Steps still wait or run.
    Running,
    /// Every step of the last stage completed.
    Completed,
    /// A step ended dead, and compensations still run.
    Compensating,
    /// A step ended dead, and no compensation is left to run. Without compensations, retrying
    /// the dead step resumes the workflow.
    Failed,
    /// A step was cancelled, and nothing is left to run.
    Cancelled,
}

impl WorkflowState {
    /// The lowercase name, as it serializes: `running`, `completed`, `compensating`, `failed`,
    /// `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkflowState::Running => "running",
            WorkflowState::Completed => "completed",
            WorkflowState::Compensating => "compensating",
            WorkflowState::Failed => "failed",
            WorkflowState::Cancelled => "cancelled",
        }
    }
}

impl WorkflowStatus {
    /// Reads workflow `id` from `backend`; `None` when no step of it is stored.
    pub async fn read<B: Backend + ?Sized>(
        backend: &B,
        id: WorkflowId,
    ) -> Result<Option<WorkflowStatus>, Error> {
        let jobs = backend
            .list(ListParams {
                filter: JobFilter::new().tag(id.tag()),
                after: None,
                limit: MAX_STEPS,
            })
            .await?;
        let mut steps: Vec<(u32, WorkflowStep)> = jobs
            .into_iter()
            .filter_map(|job| {
                let step = job.step.as_ref().filter(|s| s.workflow == id)?;
                let (index, role) = (step.index, step.role);
                Some((index, WorkflowStep { role, job }))
            })
            .collect();
        if steps.is_empty() {
            return Ok(None);
        }
        steps.sort_by_key(|(index, _)| *index);
        let steps: Vec<WorkflowStep> = steps.into_iter().map(|(_, s)| s).collect();
        Ok(Some(WorkflowStatus {
            id,
            state: state_of(&steps),
            steps,
        }))
    }

    /// The steps of the last stage (the workflow's result is theirs).
    pub fn last_stage(&self) -> impl Iterator<Item = &WorkflowStep> {
        let last = self.steps.iter().filter_map(|s| stage_of(s.role)).max();
        self.steps
            .iter()
            .filter(move |s| last.is_some() && stage_of(s.role) == last)
    }
}

fn stage_of(role: StepRole) -> Option<u32> {
    match role {
        StepRole::Step { stage } => Some(stage),
        StepRole::Compensation { .. } => None,
    }
}

fn state_of(steps: &[WorkflowStep]) -> WorkflowState {
    let (work, undo): (Vec<&WorkflowStep>, Vec<&WorkflowStep>) = steps
        .iter()
        .partition(|s| matches!(s.role, StepRole::Step { .. }));
    let last = work.iter().filter_map(|s| stage_of(s.role)).max();
    let done = work
        .iter()
        .filter(|s| stage_of(s.role) == last)
        .all(|s| s.job.status == JobStatus::Completed);
    let runs = |s: &&WorkflowStep| {
        matches!(
            s.job.status,
            JobStatus::Scheduled | JobStatus::Pending | JobStatus::Running
        )
    };
    let is = |status: JobStatus| work.iter().any(|s| s.job.status == status);
    if done {
        WorkflowState::Completed
    } else if is(JobStatus::Dead) && undo.iter().any(runs) {
        WorkflowState::Compensating
    } else if is(JobStatus::Dead) {
        WorkflowState::Failed
    } else if is(JobStatus::Cancelled) && !work.iter().any(runs) {
        WorkflowState::Cancelled
    } else {
        WorkflowState::Running
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_named_as_they_serialize() {
        for state in [
            WorkflowState::Running,
            WorkflowState::Completed,
            WorkflowState::Compensating,
            WorkflowState::Failed,
            WorkflowState::Cancelled,
        ] {
            let serde_form = serde_json::to_value(state).unwrap();
            assert_eq!(serde_form, state.as_str());
        }
    }
}
