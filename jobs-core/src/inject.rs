//! How a `#[job]` fn's injected parameters get their values: one trait, so that a parameter of any
//! other type is one error at that parameter, not a type mismatch inside generated code.

use crate::{JobContext, JobError, State, StateMap};

/// A parameter the worker fills in when it runs a job: [`State<T>`] (also written
/// [`JobState<T>`](crate::JobState)) from the worker's state, or the running job's [`JobContext`].
///
/// `#[job]` picks these parameters out by name (a type path ending in `State<..>`, `JobState<..>`
/// or `JobContext`), then takes each value through this trait, so another crate's `State`, such
/// as `axum::extract::State`, is reported right at the parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be injected into a job",
    label = "a `#[job]` parameter named `State<..>` must be `jobs::State<T>`",
    note = "use `jobs::State<T>` (or its alias `jobs::JobState<T>`) for shared state; \
            `axum::extract::State` is axum's"
)]
pub trait Inject: Sized {
    /// The value for a run of the job whose context is `ctx`, given the worker's `state`.
    fn inject(ctx: &JobContext, state: &StateMap) -> Result<Self, JobError>;
}

impl<T: Send + Sync + 'static> Inject for State<T> {
    /// The worker's value of type `T`; a missing one is a fatal error (and is caught at worker
    /// start by `Job::required_state`).
    fn inject(_: &JobContext, state: &StateMap) -> Result<Self, JobError> {
        state.require::<T>()
    }
}

impl Inject for JobContext {
    fn inject(ctx: &JobContext, _: &StateMap) -> Result<Self, JobError> {
        Ok(ctx.clone())
    }
}
