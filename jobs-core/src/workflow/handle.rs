//! `WorkflowHandle`: a typed reference to a stored workflow.

use std::marker::PhantomData;
use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::backend::Backend;
use crate::error::Error;
use crate::workflow::status::{WorkflowState, WorkflowStatus};
use crate::workflow::step::WorkflowId;
use crate::JobStatus;

/// A stored workflow whose last stage's result is `Last`: read its status, or await its result.
#[derive(Debug)]
pub struct WorkflowHandle<Last> {
    id: WorkflowId,
    _last: PhantomData<fn() -> Last>,
}

impl<Last> Clone for WorkflowHandle<Last> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Last> Copy for WorkflowHandle<Last> {}

impl<Last> WorkflowHandle<Last> {
    pub(crate) fn new(id: WorkflowId) -> Self {
        WorkflowHandle {
            id,
            _last: PhantomData,
        }
    }

    /// A handle to the workflow `id` (stored by another process, say).
    pub fn from_id(id: WorkflowId) -> Self {
        Self::new(id)
    }

    /// The workflow's id.
    pub fn id(&self) -> WorkflowId {
        self.id
    }

    /// The workflow's status and each step's job; `None` once it is no longer stored.
    pub async fn status<B: Backend + ?Sized>(
        &self,
        backend: &B,
    ) -> Result<Option<WorkflowStatus>, Error> {
        WorkflowStatus::read(backend, self.id).await
    }
}

impl<Last: DeserializeOwned> WorkflowHandle<Last> {
    /// Waits for the workflow to end: its last stage's result, or [`Error::JobEnded`] for the
    /// step that ended it dead or cancelled (once its compensations, if any, have run).
    pub async fn wait<B: Backend + ?Sized>(&self, backend: &B) -> Result<Last, Error> {
        let mut pause = Duration::from_millis(1);
        loop {
            let status = self
                .status(backend)
                .await?
                .ok_or_else(|| Error::Invalid(format!("workflow {} is not stored", self.id)))?;
            match status.state {
                WorkflowState::Completed => return result_of(&status),
                WorkflowState::Failed | WorkflowState::Cancelled => {
                    // The step that ended it: a dead one (which cancelled the rest) first.
                    let ended = [JobStatus::Dead, JobStatus::Cancelled]
                        .into_iter()
                        .find_map(|end| status.steps.iter().find(|s| s.job.status == end))
                        .map(|s| &s.job)
                        .ok_or_else(|| Error::backend("an ended workflow has no ended step"))?;
                    return Err(Error::JobEnded {
                        id: ended.id,
                        status: ended.status,
                        last_error: ended.errors.last().map(|e| e.message.clone()),
                    });
                }
                WorkflowState::Running | WorkflowState::Compensating => {}
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(250));
        }
    }
}

/// The result of a completed workflow: its last step's, or the array of its last group's.
fn result_of<Last: DeserializeOwned>(status: &WorkflowStatus) -> Result<Last, Error> {
    let results: Vec<&serde_json::value::RawValue> = status
        .last_stage()
        .map(|s| {
            s.job
                .result
                .as_deref()
                .ok_or_else(|| Error::backend("completed step has no stored result"))
        })
        .collect::<Result<_, _>>()?;
    let grouped = status
        .last_stage()
        .next()
        .and_then(|s| s.job.step.as_ref())
        .is_some_and(|s| s.group);
    Ok(match results.as_slice() {
        [one] if !grouped => serde_json::from_str(one.get())?,
        many => {
            let values: Vec<serde_json::Value> = many
                .iter()
                .map(|r| serde_json::from_str(r.get()))
                .collect::<Result<_, _>>()?;
            serde_json::from_value(serde_json::Value::Array(values))?
        }
    })
}
