//! The worker's hooks, told about each outcome.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::event::JobEvent;

use super::unwind::panic_text;

pub(crate) type Hook = Arc<dyn Fn(&JobEvent) + Send + Sync>;

/// The hooks a worker calls.
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    pub completed: Vec<Hook>,
    pub failed: Vec<Hook>,
    pub dead: Vec<Hook>,
}

/// Calls each of `hooks` with `event`. A hook that panics is logged, and the others are
/// called still: a hook's bug never stops the worker writing outcomes.
pub(crate) fn call(hooks: &[Hook], event: &JobEvent) {
    for hook in hooks {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| hook(event))) {
            tracing::error!(job.id = %event.id, panic = panic_text(&*panic), "a worker hook panicked");
        }
    }
}
