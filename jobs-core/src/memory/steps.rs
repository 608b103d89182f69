//! The memory store's share of workflows: the effects of a step that ended (see
//! [`Step`](crate::workflow::Step)).

use serde_json::value::RawValue;

use super::Store;
use crate::model::{JobStatus, Json, Timestamp};
use crate::workflow::Effect;

impl Store {
    /// Applies `effects` of a job that just ended (with `result` if it completed), pushing the
    /// queues of steps that became ready onto `woken`.
    pub(super) fn apply_effects(
        &mut self,
        effects: &[Effect],
        result: Option<&Json>,
        now: Timestamp,
        woken: &mut Vec<String>,
    ) {
        for effect in effects {
            match effect {
                Effect::Deliver {
                    job,
                    slot,
                    result: with_result,
                    ..
                } => {
                    let value = match (with_result, result) {
                        (true, Some(result)) => result.clone(),
                        _ => RawValue::from_string("null".to_string()).expect("valid JSON"),
                    };
                    self.update(*job, |r| {
                        if r.status != JobStatus::Waiting || r.inputs.contains_key(slot) {
                            return;
                        }
                        r.inputs.insert(*slot, value);
                        if !r.awaits_inputs() {
                            r.status = JobStatus::Pending;
                            r.run_at = now;
                            woken.push(r.queue.to_string());
                        }
                    });
                }
                Effect::Cancel { job, .. } => {
                    self.update(*job, |r| {
                        if matches!(
                            r.status,
                            JobStatus::Waiting | JobStatus::Scheduled | JobStatus::Pending
                        ) {
                            r.status = JobStatus::Cancelled;
                            r.finished_at = Some(now);
                        }
                    });
                }
            }
        }
    }
}
