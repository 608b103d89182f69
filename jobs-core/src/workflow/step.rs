//! What a workflow step stores beside its job (backend SPI): its place in the workflow, the
//! inputs it waits for, and what its end does to the other steps.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::ids::JobId;

/// A JSON document kept as its text.
type Json = Box<RawValue>;

/// A workflow's id, shared by all of its steps (each step job is tagged with it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WorkflowId(pub Uuid);

impl WorkflowId {
    /// A new id, ordered after every id this process made before.
    pub fn new() -> Self {
        WorkflowId(Uuid::now_v7())
    }

    /// The tag every step job of this workflow carries.
    pub fn tag(&self) -> String {
        format!("workflow:{}", self.0)
    }
}

impl Default for WorkflowId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for WorkflowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::str::FromStr for WorkflowId {
    type Err = uuid::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(WorkflowId)
    }
}

/// A job's part in a workflow, stored with it (`NewJob::step`, `JobRecord::step`).
///
/// The store's whole share of a workflow is in [`slots`](Step::slots) and the two effect
/// lists:
/// - a job with `slots > 0` is stored [`Waiting`](crate::JobStatus::Waiting), and becomes
///   pending (due at once) when the last of its slots is filled;
/// - when the job completes (the completion that applies, not a repeat of it), the store
///   applies [`on_complete`](Step::on_complete) in the same atomic write; when it becomes dead
///   (a failure without attempts left, or a rescue), [`on_dead`](Step::on_dead).
///
/// See [`Effect`] for what each effect does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// The workflow it belongs to.
    pub workflow: WorkflowId,
    /// Its place in the workflow's plan, counting from 0 (compensations come after the steps).
    pub index: u32,
    /// Whether it is a step of the workflow or a compensation.
    pub role: StepRole,
    /// Whether its stage runs several steps side by side (a group, whose result is the array
    /// of theirs).
    #[serde(default)]
    pub group: bool,
    /// How many inputs it waits for before it may run; 0 runs at once.
    #[serde(default)]
    pub slots: u32,
    /// How its payload is made of its inputs; `None` runs the stored payload.
    #[serde(default)]
    pub input: Option<InputRule>,
    /// Applied by the store when the job completes.
    #[serde(default)]
    pub on_complete: Vec<Effect>,
    /// Applied by the store when the job becomes dead.
    #[serde(default)]
    pub on_dead: Vec<Effect>,
}

/// A step's role in its workflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "role")]
pub enum StepRole {
    /// A step of stage `stage` (stages run one after the other; the steps of one stage run
    /// side by side).
    Step {
        /// The stage, counting from 0.
        stage: u32,
    },
    /// The compensation of stage `stage`, run when a later step ends dead.
    Compensation {
        /// The stage it undoes.
        stage: u32,
    },
}

/// How a waiting step's payload is made of the values delivered to it.
///
/// Its first `values` slots hold the results of the stage before it (any further slot is a
/// trigger). The stage's value is that one result, or, for a stage of several steps, the
/// JSON array of their results. A payload of one field holds the value in that field; a
/// payload of several fields takes the array's items in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputRule {
    /// How many slots hold results.
    pub values: u32,
    /// Whether the results come from a stage of several steps (an array even when it has one).
    #[serde(default)]
    pub group: bool,
    /// The payload's field names, in the order of the job fn's parameters.
    pub fields: Vec<String>,
}

/// What a step's end does to another step of its workflow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "effect")]
pub enum Effect {
    /// Fills slot `slot` of the waiting job `job` with this job's result (`result: true`) or
    /// with JSON `null` (a trigger). A slot is filled once: a second delivery to it, or a
    /// delivery to a job that no longer waits, changes nothing. When its last slot is filled,
    /// the job becomes pending, due at once.
    Deliver {
        /// The job delivered to.
        job: JobId,
        /// Its queue (where a store keeps it).
        queue: String,
        /// The slot filled.
        slot: u32,
        /// Whether the slot gets this job's result, rather than `null`.
        result: bool,
    },
    /// Cancels `job` if it waits (waiting, scheduled or pending); a running or finished job
    /// is left alone.
    Cancel {
        /// The job cancelled.
        job: JobId,
        /// Its queue.
        queue: String,
    },
}

impl Effect {
    /// The job the effect applies to.
    pub fn job(&self) -> JobId {
        match self {
            Effect::Deliver { job, .. } | Effect::Cancel { job, .. } => *job,
        }
    }

    /// That job's queue.
    pub fn queue(&self) -> &str {
        match self {
            Effect::Deliver { queue, .. } | Effect::Cancel { queue, .. } => queue,
        }
    }
}

/// The payload a step runs with: the stored one, or the one its [`InputRule`] makes of the
/// values delivered to it.
pub fn payload_of<'a>(
    stored: &'a RawValue,
    step: Option<&Step>,
    inputs: &BTreeMap<u32, Json>,
) -> Result<Cow<'a, RawValue>, String> {
    let Some(rule) = step.and_then(|s| s.input.as_ref()) else {
        return Ok(Cow::Borrowed(stored));
    };
    // Built of the raw texts, never re-parsed into numbers: a result reaches the next step
    // exactly as it was written.
    let mut values: Vec<&RawValue> = Vec::with_capacity(rule.values as usize);
    for slot in 0..rule.values {
        let value = inputs
            .get(&slot)
            .ok_or_else(|| format!("workflow step input {slot} was never delivered"))?;
        values.push(value);
    }
    fn raw(value: &impl serde::Serialize) -> Result<Json, String> {
        serde_json::value::to_raw_value(value).map_err(|e| e.to_string())
    }
    let value: Json = if rule.group {
        raw(&values)?
    } else {
        values
            .pop()
            .map_or_else(|| raw(&()), |v| Ok(v.to_owned()))?
    };
    let payload = match rule.fields.as_slice() {
        [] => raw(&BTreeMap::<&str, &RawValue>::new())?,
        [field] => raw(&BTreeMap::from([(field.as_str(), &*value)]))?,
        fields => {
            let items: Vec<Json> = serde_json::from_str(value.get()).map_err(|_| {
                format!(
                    "workflow step input is not a list of {} values for the fields {}",
                    fields.len(),
                    fields.join(", ")
                )
            })?;
            if items.len() != fields.len() {
                return Err(format!(
                    "workflow step input has {} values for the {} fields {}",
                    items.len(),
                    fields.len(),
                    fields.join(", ")
                ));
            }
            let map: BTreeMap<&str, &RawValue> = fields
                .iter()
                .map(String::as_str)
                .zip(items.iter().map(|i| &**i))
                .collect();
            raw(&map)?
        }
    };
    Ok(Cow::Owned(payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Json {
        RawValue::from_string(text.to_string()).unwrap()
    }

    fn step(values: u32, group: bool, fields: &[&str]) -> Step {
        Step {
            workflow: WorkflowId::new(),
            index: 1,
            role: StepRole::Step { stage: 1 },
            group: false,
            slots: values,
            input: Some(InputRule {
                values,
                group,
                fields: fields.iter().map(|f| f.to_string()).collect(),
            }),
            on_complete: Vec::new(),
            on_dead: Vec::new(),
        }
    }

    fn inputs(values: &[&str]) -> BTreeMap<u32, Json> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u32, raw(v)))
            .collect()
    }

    #[test]
    fn a_stored_payload_runs_as_stored_without_an_input_rule() {
        let made = payload_of(&raw(r#"{"a":1}"#), None, &BTreeMap::new())
            .map(Cow::into_owned)
            .unwrap();
        assert_eq!(made.get(), r#"{"a":1}"#);
    }

    #[test]
    fn one_field_holds_the_one_result() {
        let s = step(1, false, &["reserved"]);
        let made = payload_of(&raw("null"), Some(&s), &inputs(&[r#"{"n":2}"#]))
            .map(Cow::into_owned)
            .unwrap();
        assert_eq!(made.get(), r#"{"reserved":{"n":2}}"#);
    }

    #[test]
    fn fields_take_the_results_of_a_group_in_order() {
        let s = step(2, true, &["sent", "pdf"]);
        let made = payload_of(&raw("null"), Some(&s), &inputs(&["true", r#""a.pdf""#]))
            .map(Cow::into_owned)
            .unwrap();
        let made: serde_json::Value = serde_json::from_str(made.get()).unwrap();
        assert_eq!(made, serde_json::json!({"sent": true, "pdf": "a.pdf"}));
        let whole = step(2, true, &["both"]);
        let made = payload_of(&raw("null"), Some(&whole), &inputs(&["1", "2"]))
            .map(Cow::into_owned)
            .unwrap();
        assert_eq!(made.get(), r#"{"both":[1,2]}"#);
    }

    #[test]
    fn fields_split_one_result_that_is_a_tuple() {
        let s = step(1, false, &["a", "b"]);
        let made = payload_of(&raw("null"), Some(&s), &inputs(&["[1,2]"]))
            .map(Cow::into_owned)
            .unwrap();
        let made: serde_json::Value = serde_json::from_str(made.get()).unwrap();
        assert_eq!(made, serde_json::json!({"a": 1, "b": 2}));
        let wrong = payload_of(&raw("null"), Some(&s), &inputs(&["[1]"]))
            .map(Cow::into_owned)
            .unwrap_err();
        assert!(wrong.contains("1 values for the 2 fields a, b"), "{wrong}");
    }

    #[test]
    fn results_are_kept_as_written() {
        let s = step(2, true, &["a", "b"]);
        let big = "123456789012345678901234567890";
        let made = payload_of(&raw("null"), Some(&s), &inputs(&[big, "1E2"]))
            .map(Cow::into_owned)
            .unwrap();
        assert_eq!(made.get(), format!(r#"{{"a":{big},"b":1E2}}"#));
    }

    #[test]
    fn an_undelivered_input_is_an_error() {
        let s = step(2, true, &["a", "b"]);
        let missing = payload_of(&raw("null"), Some(&s), &inputs(&["1"]))
            .map(Cow::into_owned)
            .unwrap_err();
        assert!(missing.contains("input 1 was never delivered"), "{missing}");
    }
}
