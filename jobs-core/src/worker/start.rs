//! Start-up checks: what a worker will run (its job types, queues and schedules), worked out
//! before it takes a job. Every problem found is reported at once, in one [`Error::Start`]; a
//! queue that no registered job uses is only warned about, since jobs can be enqueued into any
//! queue with `.queue(..)`.

use std::collections::BTreeSet;

use crate::cron::Schedule;
use crate::error::StartProblem;
use crate::fast_hash::HashMap;
use crate::job::CronSpec;
use crate::presence::ScheduleInfo;
use crate::registry::{self, JobType};
use crate::state::StateMap;
use crate::Error;

use super::config::Worker;

/// What a worker runs.
pub(crate) struct Plan {
    /// Every job type it can run, by stored name.
    pub types: HashMap<String, JobType>,
    /// The queues it takes jobs from.
    pub queues: Vec<String>,
    /// The schedules of its queues' periodic jobs.
    pub periodic: Vec<Periodic>,
}

/// A periodic job of the worker's queues, with its parsed schedule.
pub(crate) struct Periodic {
    /// The job.
    pub job: JobType,
    /// Its schedule as declared.
    pub spec: CronSpec,
    /// Its schedule parsed.
    pub schedule: Schedule,
}

impl Periodic {
    /// The schedule as the store records it.
    pub(super) fn info(&self) -> ScheduleInfo {
        ScheduleInfo {
            name: self.job.name.to_string(),
            queue: self.job.options().queue,
            expression: self.spec.expression.to_string(),
            timezone: self.spec.timezone.unwrap_or("UTC").to_string(),
        }
    }
}

/// Works out what `worker` runs, or every reason it cannot start.
pub(crate) fn plan(worker: &Worker) -> Result<Plan, Error> {
    let (types, mut problems) = registry::index(
        registry::registered()
            .into_iter()
            .chain(worker.extra_types.iter().copied()),
    );
    let used: BTreeSet<String> = types.values().map(|t| t.options().queue).collect();
    let queues = if worker.queues.is_empty() {
        used.iter().cloned().collect()
    } else {
        warn_unused(&worker.queues, &used);
        worker.queues.clone()
    };
    if queues.is_empty() {
        problems.push(StartProblem::NoQueues);
    }
    let mut served: Vec<&JobType> = types
        .values()
        .filter(|t| queues.contains(&t.options().queue))
        .collect();
    served.sort_by_key(|t| t.name);
    problems.extend(missing_state(&served, &worker.state));
    let (periodic, bad_schedules) = parse_schedules(&served);
    problems.extend(bad_schedules);
    if !problems.is_empty() {
        return Err(Error::Start(problems));
    }
    Ok(Plan {
        types,
        queues,
        periodic,
    })
}

/// Warns about each named queue that no registered job uses: most often a typo, or a job type
/// that is not linked into this binary.
fn warn_unused(queues: &[String], used: &BTreeSet<String>) {
    let registered = if used.is_empty() {
        "no job is registered".to_string()
    } else {
        let names: Vec<String> = used.iter().map(|q| format!("`{q}`")).collect();
        format!("registered jobs use {}", names.join(", "))
    };
    for queue in queues.iter().filter(|q| !used.contains(*q)) {
        tracing::warn!(
            queue = %queue,
            "no registered job uses queue `{queue}` ({registered}): this worker runs only the \
             jobs enqueued into it with `.queue(..)`"
        );
    }
}

/// Each `State<T>` a served job takes that the worker was not given.
fn missing_state(types: &[&JobType], state: &StateMap) -> Vec<StartProblem> {
    types
        .iter()
        .flat_map(|t| {
            t.required_state()
                .into_iter()
                .filter(|key| !state.contains(key))
                .map(move |key| StartProblem::MissingState {
                    job: t.name.to_string(),
                    type_name: key.type_name.to_string(),
                })
        })
        .collect()
}

/// The served jobs' schedules, and a problem for each that does not parse.
fn parse_schedules(types: &[&JobType]) -> (Vec<Periodic>, Vec<StartProblem>) {
    let mut periodic = Vec::new();
    let mut problems = Vec::new();
    for t in types {
        let Some(spec) = t.cron() else { continue };
        match Schedule::from_spec(&spec) {
            Ok(schedule) => periodic.push(Periodic {
                job: **t,
                spec,
                schedule,
            }),
            Err(e) => problems.push(StartProblem::BadSchedule {
                job: t.name.to_string(),
                reason: e.to_string(),
            }),
        }
    }
    (periodic, problems)
}
