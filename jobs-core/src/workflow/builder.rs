//! The typed workflow builder: each stage's result type is the next stage's input, checked by
//! the compiler.

use std::marker::PhantomData;

use serde_json::value::RawValue;

use crate::clock::{Clock, SystemClock, Timestamp};
use crate::enqueue::{store, Enqueue, Producer};
use crate::error::Error;
use crate::job::Job;
use crate::model::NewJob;
use crate::registry::type_info;
use crate::workflow::handle::WorkflowHandle;
use crate::workflow::plan::{Plan, Planned, Stage};
use crate::workflow::step::WorkflowId;

/// What a job takes as a workflow step: its fn's parameters. `#[job]` implements it.
pub trait StepInput: Job {
    /// The one parameter's type; a tuple of the types of several; `()` for none.
    type Input;
    /// The payload's field names, in the order of the parameters.
    const FIELDS: &'static [&'static str];
}

/// `Self` can run after a stage whose result is `In` (the result of one step, or a tuple of
/// the results of a group).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot follow a stage whose result is `{In}`",
    label = "this step's input is not `{In}`",
    note = "a step's input is its fn's parameters: one parameter of the result's type, or one \
            parameter per result of a group, in order"
)]
pub trait Follows<In>: StepInput {}

impl<J: StepInput> Follows<J::Input> for J {}

/// A workflow, built stage by stage; `Last` is the result of its last stage.
///
/// Every step is an ordinary job. The whole workflow is stored in one write (on PostgreSQL
/// also inside the caller's transaction, as any enqueue), each later step waiting
/// ([`JobStatus::Waiting`](crate::JobStatus::Waiting)) until the store fills its input with
/// the results before it, in the same write that completes them. So a crash or a failed
/// attempt between two steps neither loses nor repeats a step.
///
/// ```
/// use jobs_core::{Job, JobContext, JobError, MemoryBackend, StateMap, StepInput, Workflow};
/// # #[derive(serde::Serialize, serde::Deserialize)] struct Reserve { order: u64 }
/// # impl Job for Reserve {
/// #     const NAME: &'static str = "reserve";
/// #     type Output = u64;
/// #     async fn run(self, _: JobContext, _: StateMap) -> Result<u64, JobError> { Ok(self.order) }
/// # }
/// # impl StepInput for Reserve { type Input = u64; const FIELDS: &'static [&'static str] = &["order"]; }
/// # #[derive(serde::Serialize, serde::Deserialize)] struct Pay { order: u64 }
/// # impl Job for Pay {
/// #     const NAME: &'static str = "pay";
/// #     type Output = String;
/// #     async fn run(self, _: JobContext, _: StateMap) -> Result<String, JobError> { Ok(format!("paid {}", self.order)) }
/// # }
/// # impl StepInput for Pay { type Input = u64; const FIELDS: &'static [&'static str] = &["order"]; }
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let backend = MemoryBackend::new();
/// // `Pay` takes the `u64` that `Reserve` returns; a step that took anything else would not
/// // compile.
/// let order = Workflow::start(Reserve { order: 42 }).then::<Pay>().enqueue(&backend).await?;
/// let status = order.status(&backend).await?.expect("stored");
/// assert_eq!(status.steps.len(), 2);
/// # Ok::<(), jobs_core::Error>(()) }).unwrap();
/// ```
#[must_use = "a workflow is only stored by `.enqueue(..)`"]
pub struct Workflow<Last> {
    plan: Plan,
    /// The id to store it under; a new one unless given.
    id: Option<WorkflowId>,
    /// The first mistake made while building, answered by `enqueue`.
    error: Option<Error>,
    now: Timestamp,
    _last: PhantomData<fn() -> Last>,
}

impl<Last> std::fmt::Debug for Workflow<Last> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workflow")
            .field("stages", &self.plan.stages.len())
            .field("error", &self.error)
            .finish()
    }
}

impl Workflow<()> {
    /// A workflow whose first step is `job` (with its per-call overrides, if any).
    pub fn start<J: StepInput>(job: impl Into<Enqueue<J>>) -> Workflow<J::Output> {
        Workflow::<()>::first(|now| Ok(vec![planned_with::<J>(job.into(), now)?]), false)
    }

    /// A workflow whose first stage runs `jobs` side by side; the next stage gets their
    /// results, in order.
    pub fn start_each<J: StepInput>(
        jobs: impl IntoIterator<Item = impl Into<Enqueue<J>>>,
    ) -> Workflow<Vec<J::Output>> {
        let jobs: Vec<Enqueue<J>> = jobs.into_iter().map(Into::into).collect();
        Workflow::<()>::first(
            move |now| {
                jobs.into_iter()
                    .map(|j| planned_with::<J>(j, now))
                    .collect()
            },
            true,
        )
    }

    fn first<Next>(
        steps: impl FnOnce(Timestamp) -> Result<Vec<Planned>, Error>,
        group: bool,
    ) -> Workflow<Next> {
        let now = SystemClock.now();
        let mut workflow = Workflow {
            plan: Plan::default(),
            id: None,
            error: None,
            now,
            _last: PhantomData,
        };
        match steps(now) {
            Ok(steps) if steps.is_empty() => {
                workflow.error = Some(Error::Invalid("a workflow stage needs a step".into()));
            }
            Ok(steps) => workflow.plan.stages.push(Stage {
                steps,
                group,
                compensation: None,
            }),
            Err(e) => workflow.error = Some(e),
        }
        workflow
    }
}

impl<Last> Workflow<Last> {
    /// Runs `J` once the last stage completed, with its result as `J`'s input.
    pub fn then<J: Follows<Last>>(self) -> Workflow<J::Output> {
        let step = planned::<J>(self.now);
        self.stage(vec![step], false)
    }

    /// Runs the jobs of the group `G` (a tuple of job types) side by side once the last stage
    /// completed, each with its result as input; the next stage gets their results as a tuple.
    pub fn then_all<G: Group<Last>>(self) -> Workflow<G::Outputs> {
        let steps = G::steps(self.now)
            .into_iter()
            .map(|(job, fields)| Planned {
                job,
                fields: fields.iter().map(|f| f.to_string()).collect(),
            })
            .collect();
        self.stage(steps, true)
    }

    /// Registers `C` as the compensation of the last stage: should a later step end dead, `C`
    /// runs with this stage's result, after the compensations of the stages after it (the
    /// latest first). A workflow with compensations must end in one step, and its last stage
    /// has none (nothing after it could fail): `enqueue` refuses either with `Error::Invalid`.
    pub fn compensate<C: Follows<Last>>(mut self) -> Self {
        let compensation = planned::<C>(self.now);
        match self.plan.stages.last_mut() {
            Some(stage) if stage.compensation.is_none() => stage.compensation = Some(compensation),
            Some(_) => {
                self.error.get_or_insert(Error::Invalid(format!(
                    "a stage has one compensation; `{}` would be its second",
                    C::NAME
                )));
            }
            None => {}
        }
        self
    }

    /// Stores the workflow under `id` (one made beforehand, to record beside it in the same
    /// transaction, say) rather than a new one. Two workflows stored under one id read as one.
    pub fn with_id(mut self, id: WorkflowId) -> Self {
        self.id = Some(id);
        self
    }

    /// Stores the whole workflow, or nothing, and returns its handle.
    pub async fn enqueue<M, P: Producer<M>>(
        self,
        producer: P,
    ) -> Result<WorkflowHandle<Last>, Error> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let id = self.id.unwrap_or_default();
        let jobs = self.plan.into_jobs(id)?;
        let stored = store(producer, jobs, SystemClock.now()).await?;
        if stored.iter().any(|s| s.duplicate) {
            return Err(Error::backend("a workflow step was stored as a duplicate"));
        }
        Ok(WorkflowHandle::new(id))
    }

    fn stage<Next>(mut self, steps: Vec<Planned>, group: bool) -> Workflow<Next> {
        self.plan.stages.push(Stage {
            steps,
            group,
            compensation: None,
        });
        Workflow {
            plan: self.plan,
            id: self.id,
            error: self.error,
            now: self.now,
            _last: PhantomData,
        }
    }
}

/// A tuple of job types that run side by side after a stage whose result is `In`.
pub trait Group<In> {
    /// The tuple of their results.
    type Outputs;
    /// Their jobs, each with its payload's field names, in order.
    #[doc(hidden)]
    fn steps(now: Timestamp) -> Vec<(NewJob, &'static [&'static str])>;
}

macro_rules! groups {
    ($(($($j:ident),+))*) => {$(
        impl<In, $($j: Follows<In>),+> Group<In> for ($($j,)+) {
            type Outputs = ($($j::Output,)+);
            fn steps(now: Timestamp) -> Vec<(NewJob, &'static [&'static str])> {
                vec![$((later_job::<$j>(now), $j::FIELDS)),+]
            }
        }
    )*};
}

groups! {
    (A, B)
    (A, B, C)
    (A, B, C, D)
}

/// A later step of type `J`: its type's defaults, its payload made of its inputs.
fn planned<J: StepInput>(now: Timestamp) -> Planned {
    Planned {
        job: later_job::<J>(now),
        fields: fields::<J>(),
    }
}

/// The job of a later step of type `J`, with its type's defaults and no payload yet.
fn later_job<J: Job>(now: Timestamp) -> NewJob {
    let info = type_info(J::NAME, J::VERSION, J::options(), None);
    let payload = RawValue::from_string("null".to_string()).expect("valid JSON");
    info.new_job(payload, now)
}

/// A first step: the job as given, with its overrides.
fn planned_with<J: StepInput>(job: Enqueue<J>, now: Timestamp) -> Result<Planned, Error> {
    let job: NewJob = job.to_new_job(now)?;
    Ok(Planned {
        job,
        fields: fields::<J>(),
    })
}

fn fields<J: StepInput>() -> Vec<String> {
    J::FIELDS.iter().map(|f| f.to_string()).collect()
}
