//! Workflow steps in the store: a later step waits until the completions before it fill its
//! inputs, in the same write; a group's follow-up waits for every result; a dead step runs the
//! latest compensation and cancels what can no longer run, whether a failure or a rescue made
//! it dead; the last step cancels the compensations (see [`Step`](crate::workflow::Step)).

use std::time::Duration;

use crate::testing::support::*;
use crate::workflow::plan::{Plan, Planned, Stage};
use crate::workflow::{Effect, WorkflowId};
use crate::*;

use super::{complete, fail_with, fetch, fetch_params, manage_ids};

/// A step job named `name` whose payload has the one field `input`.
fn planned(name: &str) -> Planned {
    Planned {
        job: new_job(name),
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

/// Stores the workflow of `stages` at `t0`; the ids of its jobs by name.
async fn store(b: &AnyBackend, stages: Vec<Stage>) -> (WorkflowId, Vec<(String, JobId)>) {
    let id = WorkflowId::new();
    let jobs = Plan { stages }.into_jobs(id).expect("a valid plan");
    let names: Vec<(String, JobId)> = jobs.iter().map(|j| (j.name.clone(), j.id)).collect();
    let stored = put_many(b, jobs, t0()).await;
    assert_eq!(
        stored,
        names.iter().map(|(_, id)| *id).collect::<Vec<_>>(),
        "every step is stored under its own id"
    );
    (id, names)
}

fn id_of(names: &[(String, JobId)], name: &str) -> JobId {
    names.iter().find(|(n, _)| n == name).expect("a step").1
}

/// Leases the ready jobs and returns the one named `name` (releasing none: the others stay
/// leased and are ignored by the check).
async fn lease(b: &AnyBackend, name: &str, now: Timestamp) -> LeasedJob {
    let leased = fetch(b, 10, now).await;
    let names: Vec<&str> = leased.iter().map(|j| &*j.record.name).collect();
    assert_eq!(names, [name], "only `{name}` is ready");
    leased.into_iter().next().expect("one")
}

async fn status_of(b: &AnyBackend, id: JobId) -> JobStatus {
    record(b, id).await.status
}

fn input(record: &JobRecord, slot: u32) -> Option<serde_json::Value> {
    record.inputs.get(&slot).map(value)
}

/// A chain: the second step is stored waiting (counted, listed, not fetched) and becomes
/// pending, due at once, with the first step's result as its input, when the first completes.
pub async fn workflow_steps_wait_for_the_results_before_them(b: AnyBackend) {
    let (workflow, names) = store(&b, vec![stage(&["a"], None), stage(&["b"], None)]).await;
    let (a, b_id) = (id_of(&names, "a"), id_of(&names, "b"));
    let waiting = record(&b, b_id).await;
    assert_eq!(waiting.status, JobStatus::Waiting);
    let step = waiting.step.as_ref().expect("the step is read back");
    assert_eq!((step.workflow, step.slots), (workflow, 1));
    assert!(waiting.inputs.is_empty());
    let c = counts(&b).await;
    assert_eq!((c.waiting, c.pending), (1, 1), "waiting steps are counted");
    let listed = b
        .list(ListParams {
            filter: JobFilter::new()
                .tag(workflow.tag())
                .status(JobStatus::Waiting),
            after: None,
            limit: 10,
        })
        .await
        .expect("list");
    assert_eq!(listed.iter().map(|r| r.id).collect::<Vec<_>>(), [b_id]);
    let first = lease(&b, "a", t0()).await;
    assert_eq!(first.record.id, a);
    assert!(
        fetch(&b, 10, at(10)).await.is_empty(),
        "b waits while a runs"
    );
    assert!(complete(&b, &first, r#"{"n":7}"#, at(1_000)).await);
    let ready = record(&b, b_id).await;
    assert_eq!(ready.status, JobStatus::Pending);
    assert_eq!(ready.run_at, at(1_000), "due when its input arrived");
    assert_eq!(input(&ready, 0), Some(serde_json::json!({"n": 7})));
    let second = lease(&b, "b", at(1_000)).await;
    assert_eq!(input(&second.record, 0), Some(serde_json::json!({"n": 7})));
    let payload = workflow::payload_of(
        &second.record.payload,
        second.record.step.as_deref(),
        &second.record.inputs,
    )
    .expect("a payload");
    assert_eq!(
        value(&payload.into_owned()),
        serde_json::json!({"input": {"n": 7}})
    );
}

/// A group's follow-up waits for every result of the group, delivered one by one or by one
/// batch of completions; a completion repeated under its token delivers nothing again.
pub async fn workflow_group_follow_up_waits_for_every_result(b: AnyBackend) {
    let (_, names) = store(
        &b,
        vec![stage(&["g1", "g2", "g3"], None), stage(&["after"], None)],
    )
    .await;
    let after = id_of(&names, "after");
    let leased = fetch(&b, 10, t0()).await;
    assert_eq!(leased.len(), 3, "the group runs side by side");
    let by_name = |n: &str| {
        leased
            .iter()
            .find(|j| *j.record.name == *n)
            .expect("leased")
    };
    assert!(complete(&b, by_name("g2"), "2", at(10)).await);
    assert!(
        complete(&b, by_name("g2"), "2", at(11)).await,
        "a repeat is accepted"
    );
    let one = record(&b, after).await;
    assert_eq!(one.status, JobStatus::Waiting);
    assert_eq!(one.inputs.len(), 1, "a repeated completion delivers once");
    let both = CompleteParams {
        items: ["g1", "g3"]
            .map(|n| Completion {
                lease: by_name(n).lease(),
                result: json(if n == "g1" { "1" } else { "3" }),
            })
            .into(),
        now: at(20),
    };
    assert_eq!(b.complete(both).await.expect("complete"), [true, true]);
    let ready = record(&b, after).await;
    assert_eq!(
        ready.status,
        JobStatus::Pending,
        "all three results arrived"
    );
    let inputs: Vec<serde_json::Value> = (0..3).filter_map(|s| input(&ready, s)).collect();
    assert_eq!(inputs, [1, 2, 3].map(serde_json::Value::from));
    let payload = workflow::payload_of(&ready.payload, ready.step.as_deref(), &ready.inputs)
        .expect("a payload");
    assert_eq!(
        value(&payload.into_owned()),
        serde_json::json!({"input": [1, 2, 3]})
    );
}

/// stock (undo: release) → pay → ship: when pay ends dead, release runs with stock's result
/// and ship is cancelled.
pub async fn workflow_dead_step_runs_the_compensation_and_cancels_the_rest(b: AnyBackend) {
    let (_, names) = store(
        &b,
        vec![
            stage(&["stock"], Some("release")),
            stage(&["pay"], None),
            stage(&["ship"], None),
        ],
    )
    .await;
    let id = |n: &str| id_of(&names, n);
    let stock = lease(&b, "stock", t0()).await;
    assert!(complete(&b, &stock, r#""reserved""#, at(10)).await);
    let release = record(&b, id("release")).await;
    assert_eq!(
        release.status,
        JobStatus::Waiting,
        "no compensation without a failure"
    );
    assert_eq!(input(&release, 0), Some(serde_json::json!("reserved")));
    let pay = lease(&b, "pay", at(10)).await;
    let declined = ErrorReport::new(ErrorKind::Fatal, "card declined");
    assert!(fail_with(&b, &pay, declined, None, at(20)).await);
    assert_eq!(status_of(&b, id("pay")).await, JobStatus::Dead);
    assert_eq!(status_of(&b, id("ship")).await, JobStatus::Cancelled);
    let release = record(&b, id("release")).await;
    assert_eq!(release.status, JobStatus::Pending, "the compensation runs");
    assert_eq!(
        input(&release, 1),
        Some(serde_json::Value::Null),
        "its trigger"
    );
    let undo = lease(&b, "release", at(20)).await;
    let payload = workflow::payload_of(
        &undo.record.payload,
        undo.record.step.as_deref(),
        &undo.record.inputs,
    )
    .expect("a payload");
    assert_eq!(
        value(&payload.into_owned()),
        serde_json::json!({"input": "reserved"})
    );
}

/// a (undo: c0) → b (undo: c1) → z: when z ends dead, c1 runs first; c0 only once c1 has
/// ended.
pub async fn workflow_compensations_run_latest_first(b: AnyBackend) {
    let (_, names) = store(
        &b,
        vec![
            stage(&["a"], Some("c0")),
            stage(&["b"], Some("c1")),
            stage(&["z"], None),
        ],
    )
    .await;
    let id = |n: &str| id_of(&names, n);
    for (step, at_ms) in [("a", 0), ("b", 10)] {
        let leased = lease(&b, step, at(at_ms)).await;
        assert!(complete(&b, &leased, r#""done""#, at(at_ms + 5)).await);
    }
    let z = lease(&b, "z", at(20)).await;
    let fatal = ErrorReport::new(ErrorKind::Fatal, "no");
    assert!(fail_with(&b, &z, fatal, None, at(30)).await);
    assert_eq!(status_of(&b, id("c1")).await, JobStatus::Pending);
    assert_eq!(
        status_of(&b, id("c0")).await,
        JobStatus::Waiting,
        "c0 waits for c1"
    );
    let c1 = lease(&b, "c1", at(30)).await;
    assert!(complete(&b, &c1, "null", at(40)).await);
    assert_eq!(status_of(&b, id("c0")).await, JobStatus::Pending);
    lease(&b, "c0", at(40)).await;
}

/// A step that a rescue makes dead (its lease lapsed on its last attempt) runs the
/// compensation too; a failure that leaves attempts runs nothing.
pub async fn workflow_rescued_dead_step_runs_the_compensation(b: AnyBackend) {
    let mut last = stage(&["pay"], None);
    last.steps[0].job.max_attempts = 2;
    let (_, names) = store(&b, vec![stage(&["stock"], Some("release")), last]).await;
    let id = |n: &str| id_of(&names, n);
    let stock = lease(&b, "stock", t0()).await;
    assert!(complete(&b, &stock, "1", at(10)).await);
    let pay = lease(&b, "pay", at(10)).await;
    let retry = ErrorReport::new(ErrorKind::Retryable, "try again");
    assert!(fail_with(&b, &pay, retry, Some(at(20)), at(15)).await);
    assert_eq!(status_of(&b, id("release")).await, JobStatus::Waiting);
    let again = lease(&b, "pay", at(20)).await;
    assert_eq!(again.record.attempt, 2);
    let lapsed = clock::later(at(20), Duration::from_secs(6));
    let rescued = b
        .rescue(RescueParams {
            target: RescueTarget::Lapsed,
            limit: 10,
            error: ErrorReport::lease_expired(),
            now: lapsed,
        })
        .await
        .expect("rescue");
    assert_eq!(rescued, [id("pay")]);
    assert_eq!(status_of(&b, id("pay")).await, JobStatus::Dead);
    assert_eq!(status_of(&b, id("release")).await, JobStatus::Pending);
}

/// When the last step completes, the compensations that will never be needed are cancelled.
pub async fn workflow_last_step_cancels_the_compensations(b: AnyBackend) {
    let (_, names) = store(
        &b,
        vec![stage(&["stock"], Some("release")), stage(&["pay"], None)],
    )
    .await;
    let stock = lease(&b, "stock", t0()).await;
    assert!(complete(&b, &stock, "1", at(10)).await);
    let pay = lease(&b, "pay", at(10)).await;
    assert!(complete(&b, &pay, "2", at(20)).await);
    let release = id_of(&names, "release");
    assert_eq!(status_of(&b, release).await, JobStatus::Cancelled);
    assert!(
        b.fetch(fetch_params(&[QUEUE], 10, at(30)))
            .await
            .expect("fetch")
            .is_empty(),
        "nothing is left to run"
    );
}

/// A delivery reaches a step in another queue. A store that cannot write across queues in one
/// atomic write (Redis Cluster) refuses such a workflow whole instead.
pub async fn workflow_steps_span_queues(b: AnyBackend) {
    let mut later = stage(&["elsewhere"], None);
    later.steps[0].job.queue = format!("{QUEUE}-other");
    let jobs = Plan {
        stages: vec![stage(&["here"], None), later],
    }
    .into_jobs(WorkflowId::new())
    .expect("a valid plan");
    let names: Vec<(String, JobId)> = jobs.iter().map(|j| (j.name.clone(), j.id)).collect();
    match b.enqueue(EnqueueParams { jobs, now: t0() }).await {
        // A store that cannot write across queues atomically (Redis Cluster) refuses the
        // workflow as a whole, storing none of it.
        Err(Error::Invalid(message)) if message.contains("must share one queue") => {
            for (_, id) in &names {
                assert!(read(&b, *id).await.is_none(), "nothing of it is stored");
            }
            return;
        }
        stored => assert_eq!(
            stored
                .expect("enqueue")
                .iter()
                .map(|e| e.id)
                .collect::<Vec<_>>(),
            names.iter().map(|(_, id)| *id).collect::<Vec<_>>()
        ),
    }
    let here = lease(&b, "here", t0()).await;
    assert!(complete(&b, &here, r#"[1,"x"]"#, at(10)).await);
    let moved = record(&b, id_of(&names, "elsewhere")).await;
    assert_eq!(moved.status, JobStatus::Pending);
    assert_eq!(input(&moved, 0), Some(serde_json::json!([1, "x"])));
    let other = b
        .fetch(fetch_params(&[&format!("{QUEUE}-other")], 10, at(10)))
        .await
        .expect("fetch");
    assert_eq!(other.len(), 1, "it is ready in its own queue");
    let effects = &moved.step.as_ref().expect("a step").on_complete;
    assert!(effects.iter().all(|e| !matches!(e, Effect::Cancel { .. })));
}

/// A result reaches the next step as its text was written (big integers, number forms, escapes
/// kept), and a result that some stores could not parse takes no other completion of its batch
/// down.
pub async fn workflow_results_reach_the_next_step_as_written(b: AnyBackend) {
    let (_, names) = store(&b, vec![stage(&["a"], None), stage(&["b"], None)]).await;
    let ordinary = put(&b, new_job("ordinary")).await;
    let leased = fetch(&b, 10, t0()).await;
    assert_eq!(leased.len(), 2);
    let text = r#"{"big":123456789012345678901234567890,"n":1E2,"s":"nul\u0000"}"#;
    let items = leased
        .iter()
        .map(|j| Completion {
            lease: j.lease(),
            result: json(if &*j.record.name == "a" { text } else { "1" }),
        })
        .collect();
    let done = b
        .complete(CompleteParams { items, now: at(10) })
        .await
        .expect("complete");
    assert_eq!(done, [true, true], "both completions of the batch apply");
    assert_eq!(status_of(&b, ordinary).await, JobStatus::Completed);
    let next = record(&b, id_of(&names, "b")).await;
    assert_eq!(next.status, JobStatus::Pending);
    assert_eq!(
        next.inputs.get(&0).map(|v| v.get()),
        Some(text),
        "the text as written"
    );
}

/// A step retried by hand whose inputs have not all arrived goes back to waiting, never to
/// pending: a cancelled follower waits again for the step before it, and a compensation that
/// the workflow's success cancelled does not run.
pub async fn workflow_retried_step_waits_for_its_inputs(b: AnyBackend) {
    let (_, names) = store(&b, vec![stage(&["a"], Some("undo")), stage(&["z"], None)]).await;
    let id = |n: &str| id_of(&names, n);
    let z = id("z");
    assert_eq!(
        manage_ids(&b, Action::Cancel, &[z], t0()).await.changed,
        [z]
    );
    assert_eq!(
        manage_ids(&b, Action::Retry, &[z], at(1)).await.changed,
        [z]
    );
    assert_eq!(
        status_of(&b, z).await,
        JobStatus::Waiting,
        "z waits for a again"
    );
    let a = lease(&b, "a", at(2)).await;
    assert!(complete(&b, &a, "1", at(3)).await);
    assert_eq!(status_of(&b, z).await, JobStatus::Pending);
    let z_leased = lease(&b, "z", at(3)).await;
    assert!(complete(&b, &z_leased, "2", at(4)).await);
    let undo = id("undo");
    assert_eq!(status_of(&b, undo).await, JobStatus::Cancelled);
    assert_eq!(
        manage_ids(&b, Action::Retry, &[undo], at(5)).await.changed,
        [undo]
    );
    assert_eq!(
        status_of(&b, undo).await,
        JobStatus::Waiting,
        "no failure triggered it"
    );
    assert!(fetch(&b, 10, at(6)).await.is_empty(), "nothing runs");
}
