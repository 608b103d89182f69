//! Workflows: chains of typed steps, groups that run side by side with a step that gets all of
//! their results, and compensations (a saga) that undo completed stages when a later step ends
//! dead.
//!
//! Each step is an ordinary job (leases, fencing, retries and the dead set apply to it), tagged
//! with its workflow's id. The whole workflow is stored at once, in one write; a later step
//! waits ([`JobStatus::Waiting`](crate::JobStatus::Waiting)) until the store, in the same
//! atomic write that completes the steps before it, fills its input with their results
//! ([`Step`]). Its payload is made of those results when it runs ([`payload_of`]).
//!
//! Build one with [`Workflow`], read it from any process with [`WorkflowStatus::read`] or its
//! [`WorkflowHandle`].

mod builder;
mod handle;
pub(crate) mod plan;
mod status;
pub(crate) mod step;

pub use builder::{Follows, Group, StepInput, Workflow};
pub use handle::WorkflowHandle;
pub use status::{WorkflowState, WorkflowStatus, WorkflowStep, MAX_STEPS};
pub use step::{payload_of, Effect, InputRule, Step, StepRole, WorkflowId};
