//! A workflow's plan, untyped: its stages of step jobs and their compensations, turned into the
//! jobs that store it, each with the [`Step`] that links it to the others.

use serde_json::value::RawValue;

use crate::error::Error;
use crate::model::NewJob;
use crate::workflow::step::{Effect, InputRule, Step, StepRole, WorkflowId};

/// One job of the plan: built from its type's defaults (or the caller's `Enqueue` for a first
/// step), with the names of its payload's fields.
#[derive(Clone, Debug)]
pub(crate) struct Planned {
    pub(crate) job: NewJob,
    pub(crate) fields: Vec<String>,
}

/// Steps that run side by side, after the stage before them has completed.
#[derive(Clone, Debug)]
pub(crate) struct Stage {
    pub(crate) steps: Vec<Planned>,
    /// Whether the stage's value is the array of its steps' results (a group), rather than
    /// its one step's result.
    pub(crate) group: bool,
    pub(crate) compensation: Option<Planned>,
}

/// The stages of a workflow, in order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Plan {
    pub(crate) stages: Vec<Stage>,
}

impl Plan {
    /// The jobs that store the workflow `id`: every step and compensation, the later ones
    /// waiting for their inputs. When a step ends dead and the workflow has compensations, the
    /// compensations of the completed stages before it run, latest first, and the steps that
    /// can no longer run are cancelled; without compensations, they keep waiting, so retrying
    /// the dead step by hand resumes the workflow. When the last step completes, the
    /// compensations are cancelled.
    pub(crate) fn into_jobs(self, id: WorkflowId) -> Result<Vec<NewJob>, Error> {
        let stages = self.stages;
        let last = stages
            .len()
            .checked_sub(1)
            .ok_or_else(|| Error::Invalid("a workflow needs at least one step".to_string()))?;
        let compensated: Vec<usize> = (0..stages.len())
            .filter(|&s| stages[s].compensation.is_some())
            .collect();
        if stages[last].compensation.is_some() {
            return Err(Error::Invalid(
                "the last stage has a compensation that could never run: nothing after it can \
                 fail"
                    .to_string(),
            ));
        }
        if !compensated.is_empty() && stages[last].steps.len() != 1 {
            return Err(Error::Invalid(
                "a workflow with compensations must end in one step (`then`), which tells that \
                 it completed"
                    .to_string(),
            ));
        }
        for planned in stages.iter().flat_map(all_of) {
            if planned.job.unique_key.is_some() || planned.job.coalesce.is_some() {
                return Err(Error::Invalid(format!(
                    "workflow step `{}`: a step cannot be unique, throttled or debounced",
                    planned.job.name
                )));
            }
        }
        // What each stage's steps and compensation are, as (id, queue) pairs.
        let target = |p: &Planned| (p.job.id, p.job.queue.clone());
        let deliver = |p: &Planned, slot: usize, result: bool| {
            let (job, queue) = target(p);
            Effect::Deliver {
                job,
                queue,
                slot: slot as u32,
                result,
            }
        };
        let cancel = |p: &Planned| {
            let (job, queue) = target(p);
            Effect::Cancel { job, queue }
        };
        // The compensation that runs first when stage `stage` fails: that of the latest
        // compensated stage before it.
        let first_undo = |stage: usize| {
            compensated.iter().rev().find(|&&s| s < stage).map(|&s| {
                let c = stages[s].compensation.as_ref().expect("compensated");
                deliver(c, stages[s].steps.len(), false)
            })
        };
        let mut jobs = Vec::new();
        let mut index = 0u32;
        let mut step_of =
            |planned: &Planned, role: StepRole, group: bool, input: Option<(&Stage, usize)>| {
                let (slots, input) = match input {
                    None => (0, None),
                    Some((before, triggers)) => {
                        let values = before.steps.len() as u32;
                        let rule = InputRule {
                            values,
                            group: before.group,
                            fields: planned.fields.clone(),
                        };
                        (values + triggers as u32, Some(rule))
                    }
                };
                let step = Step {
                    workflow: id,
                    index,
                    role,
                    group,
                    slots,
                    input,
                    on_complete: Vec::new(),
                    on_dead: Vec::new(),
                };
                index += 1;
                step
            };
        let mut steps: Vec<Vec<Step>> = Vec::with_capacity(stages.len());
        for (s, stage) in stages.iter().enumerate() {
            let role = StepRole::Step { stage: s as u32 };
            let before = s.checked_sub(1).map(|b| (&stages[b], 0));
            steps.push(
                stage
                    .steps
                    .iter()
                    .map(|p| step_of(p, role, stage.group, before))
                    .collect(),
            );
        }
        let mut undo: Vec<Option<Step>> = Vec::with_capacity(stages.len());
        for (s, stage) in stages.iter().enumerate() {
            let role = StepRole::Compensation { stage: s as u32 };
            undo.push(
                stage
                    .compensation
                    .as_ref()
                    .map(|c| step_of(c, role, false, Some((stage, 1)))),
            );
        }
        for (s, stage) in stages.iter().enumerate() {
            let mut next = Vec::new();
            if let Some(after) = stages.get(s + 1) {
                for (slot, _) in stage.steps.iter().enumerate() {
                    next.push(after.steps.iter().map(|p| deliver(p, slot, true)).collect());
                }
            } else {
                next = vec![Vec::new(); stage.steps.len()];
            }
            let mut on_dead = Vec::new();
            if !compensated.is_empty() {
                on_dead.extend(first_undo(s));
                // Whatever can no longer run: the rest of this stage, every later stage, and
                // the compensations of this stage and after it.
                for later in &stages[s..] {
                    on_dead.extend(later.steps.iter().map(cancel));
                }
                for later in &stages[s..] {
                    on_dead.extend(later.compensation.iter().map(cancel));
                }
            }
            let is_last = s == last;
            for (slot, step) in steps[s].iter_mut().enumerate() {
                step.on_complete = std::mem::take(&mut next[slot]);
                if let Some(c) = &stage.compensation {
                    step.on_complete.push(deliver(c, slot, true));
                }
                if is_last {
                    let undos = stages.iter().filter_map(|st| st.compensation.as_ref());
                    step.on_complete.extend(undos.map(cancel));
                }
                let own = stage.steps[slot].job.id;
                step.on_dead = on_dead.iter().filter(|e| e.job() != own).cloned().collect();
            }
            if let Some(c) = undo[s].as_mut() {
                // A compensation that ends, well or not, hands on to the one before it.
                let next_undo: Vec<Effect> = first_undo(s).into_iter().collect();
                c.on_complete = next_undo.clone();
                c.on_dead = next_undo;
            }
        }
        for ((stage, steps), c) in stages.into_iter().zip(steps).zip(undo) {
            for (planned, step) in stage.steps.into_iter().zip(steps) {
                jobs.push(store(planned, step, id));
            }
            if let (Some(planned), Some(step)) = (stage.compensation, c) {
                jobs.push(store(planned, step, id));
            }
        }
        jobs.sort_by_key(|j| j.step.as_ref().map(|s| s.index));
        Ok(jobs)
    }
}

/// A stage's steps and its compensation.
fn all_of(stage: &Stage) -> impl Iterator<Item = &Planned> {
    stage.steps.iter().chain(stage.compensation.as_ref())
}

/// The job of `planned`, linked by `step` and tagged with its workflow.
fn store(planned: Planned, step: Step, id: WorkflowId) -> NewJob {
    let mut job = planned.job;
    if step.input.is_some() {
        job.payload = RawValue::from_string("null".to_string()).expect("valid JSON");
    }
    let tag = id.tag();
    if !job.tags.contains(&tag) {
        job.tags.insert(0, tag);
    }
    job.step = Some(Box::new(step));
    job
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::JobId;
    use chrono::Utc;

    fn planned(name: &str) -> Planned {
        let info = crate::registry::type_info(name, 1, crate::job::JobOptions::default(), None);
        Planned {
            job: info.new_job(RawValue::from_string("{}".to_string()).unwrap(), Utc::now()),
            fields: vec!["input".to_string()],
        }
    }

    fn stage(names: &[&str], undo: Option<&str>) -> Stage {
        Stage {
            steps: names.iter().map(|n| planned(n)).collect(),
            group: names.len() > 1,
            compensation: undo.map(planned),
        }
    }

    fn by_name<'j>(jobs: &'j [NewJob], name: &str) -> &'j NewJob {
        jobs.iter().find(|j| j.name == name).unwrap()
    }

    fn delivered(effects: &[Effect]) -> Vec<(JobId, u32, bool)> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Deliver {
                    job, slot, result, ..
                } => Some((*job, *slot, *result)),
                Effect::Cancel { .. } => None,
            })
            .collect()
    }

    fn cancelled(effects: &[Effect]) -> Vec<JobId> {
        effects
            .iter()
            .filter(|e| matches!(e, Effect::Cancel { .. }))
            .map(Effect::job)
            .collect()
    }

    /// stock (undo: release) → pay (undo: refund) → email + pdf → done.
    fn orders() -> Vec<NewJob> {
        Plan {
            stages: vec![
                stage(&["stock"], Some("release")),
                stage(&["pay"], Some("refund")),
                stage(&["email", "pdf"], None),
                stage(&["done"], None),
            ],
        }
        .into_jobs(WorkflowId::new())
        .unwrap()
    }

    #[test]
    fn steps_wait_for_the_stage_before_them() {
        let jobs = orders();
        let slots = |n: &str| by_name(&jobs, n).step.as_ref().unwrap().slots;
        assert_eq!(
            ["stock", "pay", "email", "pdf", "done", "release", "refund"].map(slots),
            [0, 1, 1, 1, 2, 2, 2]
        );
        let pay = by_name(&jobs, "pay");
        let (email, pdf, refund) = (
            by_name(&jobs, "email"),
            by_name(&jobs, "pdf"),
            by_name(&jobs, "refund"),
        );
        assert_eq!(
            delivered(&pay.step.as_ref().unwrap().on_complete),
            vec![(email.id, 0, true), (pdf.id, 0, true), (refund.id, 0, true)]
        );
        let done = by_name(&jobs, "done");
        let pdf_step = pdf.step.as_ref().unwrap();
        assert_eq!(delivered(&pdf_step.on_complete), vec![(done.id, 1, true)]);
        let rule = done.step.as_ref().unwrap().input.as_ref().unwrap();
        assert!(rule.group && rule.values == 2);
        assert_eq!(
            done.payload.get(),
            "null",
            "made of its inputs when it runs"
        );
        assert!(done.tags[0].starts_with("workflow:"));
    }

    #[test]
    fn a_dead_step_runs_the_latest_compensation_and_cancels_what_can_no_longer_run() {
        let jobs = orders();
        let id = |n: &str| by_name(&jobs, n).id;
        let email = by_name(&jobs, "email").step.clone().unwrap();
        assert_eq!(delivered(&email.on_dead), vec![(id("refund"), 1, false)]);
        assert_eq!(cancelled(&email.on_dead), vec![id("pdf"), id("done")]);
        let pay = by_name(&jobs, "pay").step.clone().unwrap();
        assert_eq!(delivered(&pay.on_dead), vec![(id("release"), 1, false)]);
        assert_eq!(
            cancelled(&pay.on_dead),
            vec![id("email"), id("pdf"), id("done"), id("refund")]
        );
        let refund = by_name(&jobs, "refund").step.clone().unwrap();
        let hands_on = vec![(id("release"), 1, false)];
        assert_eq!(delivered(&refund.on_complete), hands_on);
        assert_eq!(delivered(&refund.on_dead), hands_on);
        let stock = by_name(&jobs, "stock").step.clone().unwrap();
        assert!(delivered(&stock.on_dead).is_empty());
    }

    #[test]
    fn the_last_step_cancels_the_compensations() {
        let jobs = orders();
        let done = by_name(&jobs, "done").step.clone().unwrap();
        assert_eq!(
            cancelled(&done.on_complete),
            vec![by_name(&jobs, "release").id, by_name(&jobs, "refund").id]
        );
    }

    #[test]
    fn without_compensations_a_dead_step_leaves_the_rest_waiting() {
        let jobs = Plan {
            stages: vec![stage(&["a"], None), stage(&["b"], None)],
        }
        .into_jobs(WorkflowId::new())
        .unwrap();
        assert!(jobs
            .iter()
            .all(|j| j.step.as_ref().unwrap().on_dead.is_empty()));
    }

    #[test]
    fn compensations_need_one_last_step_and_steps_cannot_be_unique() {
        let ends_in_a_group = Plan {
            stages: vec![stage(&["a"], Some("undo")), stage(&["b", "c"], None)],
        };
        let err = ends_in_a_group.into_jobs(WorkflowId::new()).unwrap_err();
        assert!(err.to_string().contains("must end in one step"), "{err}");
        let undone_last = Plan {
            stages: vec![stage(&["a"], None), stage(&["b"], Some("undo"))],
        };
        let err = undone_last.into_jobs(WorkflowId::new()).unwrap_err();
        assert!(err.to_string().contains("could never run"), "{err}");
        let mut unique = stage(&["a"], None);
        unique.steps[0].job.unique_key = Some("k".into());
        let err = Plan {
            stages: vec![unique],
        }
        .into_jobs(WorkflowId::new())
        .unwrap_err();
        assert!(err.to_string().contains("cannot be unique"), "{err}");
        assert!(Plan::default().into_jobs(WorkflowId::new()).is_err());
    }
}
