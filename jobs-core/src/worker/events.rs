//! The worker's hooks, told about each outcome.

use std::sync::Arc;

use crate::event::JobEvent;

pub(crate) type Hook = Arc<dyn Fn(&JobEvent) + Send + Sync>;

/// The hooks a worker calls.
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    pub completed: Vec<Hook>,
    pub failed: Vec<Hook>,
    pub dead: Vec<Hook>,
}

pub(crate) fn call(hooks: &[Hook], event: &JobEvent) {
    for hook in hooks {
        hook(event);
    }
}
