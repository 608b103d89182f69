//! Workflow steps as this backend stores them: the fields of a step job (and none on any other
//! job), results delivered as their raw text, a workflow across queues refused on a cluster
//! with nothing stored, a workflow across queues stored all or nothing on one server, and a
//! step retried by hand before its inputs arrived stored waiting again.

use std::collections::BTreeMap;

use jobs_core::workflow::{Effect, InputRule, Step, StepRole, WorkflowId};
use jobs_core::{
    Action, Backend, CompleteParams, Completion, CountsParams, EnqueueParams, Enqueued, Error,
    JobId, JobStatus, ManageParams, NewJob, Operations, QueueCounts, QueueLimits, SetLimitsParams,
    Target, Timestamp,
};
use jobs_redis::{redis, RedisBackend};
use serde_json::value::RawValue;

use crate::support::{
    at, cluster_backend, fetch, job, raw_connection, signals, single_backend, t0, wake_subscription,
};

/// Step `index` of `workflow`, waiting for `slots` inputs (the first one its payload's field
/// `input`), with the effects `on_complete`.
fn step(workflow: WorkflowId, index: u32, slots: u32, on_complete: Vec<Effect>) -> Box<Step> {
    Box::new(Step {
        workflow,
        index,
        role: StepRole::Step { stage: index },
        group: false,
        slots,
        input: (slots > 0).then(|| InputRule {
            values: 1,
            group: false,
            fields: vec!["input".into()],
        }),
        on_complete,
        on_dead: Vec::new(),
    })
}

/// A chain of two steps: `first` in `queue_a`, then `second` in `queue_b` with `first`'s
/// result as its input.
fn chain(queue_a: &str, queue_b: &str) -> (NewJob, NewJob) {
    let workflow = WorkflowId::new();
    let mut second = job(queue_b, t0());
    second.step = Some(step(workflow, 1, 1, Vec::new()));
    second.tags = vec![workflow.tag()];
    let mut first = job(queue_a, t0());
    first.step = Some(step(
        workflow,
        0,
        0,
        vec![Effect::Deliver {
            job: second.id,
            queue: queue_b.into(),
            slot: 0,
            result: true,
        }],
    ));
    first.tags = vec![workflow.tag()];
    (first, second)
}

async fn put(b: &RedisBackend, jobs: Vec<NewJob>) -> Result<Vec<Enqueued>, Error> {
    b.enqueue(EnqueueParams { jobs, now: t0() }).await
}

async fn counts(b: &RedisBackend, queue: &str) -> QueueCounts {
    b.counts(CountsParams {
        queue: queue.into(),
    })
    .await
    .unwrap()
}

/// The hash of job `job` as stored on the single server.
async fn hash(b: &RedisBackend, job: &NewJob) -> BTreeMap<String, String> {
    let mut conn = raw_connection().await;
    redis::cmd("HGETALL")
        .arg(format!(
            "{{{}:{}}}:j:{}",
            b.key_prefix(),
            job.queue,
            job.id.0.simple()
        ))
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// Leases the ready jobs of `queue` and completes them, job `id`'s with `result`.
async fn complete(b: &RedisBackend, queue: &str, id: JobId, result: &str, now: Timestamp) {
    let leased = b.fetch(fetch(&[queue], 10, now)).await.unwrap();
    assert!(leased.iter().any(|j| j.record.id == id), "{id} is ready");
    let items: Vec<Completion> = leased
        .iter()
        .map(|j| Completion {
            lease: j.lease(),
            result: RawValue::from_string(if j.record.id == id { result } else { "{}" }.into())
                .unwrap(),
        })
        .collect();
    let done = b.complete(CompleteParams { items, now }).await.unwrap();
    assert!(done.iter().all(|ok| *ok));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_steps_store_step_fields_and_results_keep_their_text() {
    let b = single_backend().await;
    let plain = job("wq", t0());
    let (first, second) = chain("wq", "wq");
    put(&b, vec![plain.clone(), first.clone(), second.clone()])
        .await
        .unwrap();

    let fields: Vec<String> = hash(&b, &plain).await.into_keys().collect();
    assert_eq!(
        fields,
        ["c", "m", "p", "pr", "ra", "s"],
        "a job without a step"
    );

    let waiting = hash(&b, &second).await;
    assert_eq!(waiting["s"], "w");
    let stored: Step = serde_json::from_str(&waiting["wf"]).unwrap();
    assert_eq!(&stored, second.step.as_deref().unwrap());
    assert!(
        !waiting.keys().any(|f| f.starts_with('i') || f == "wn"),
        "no input yet: {waiting:?}"
    );
    let ready: Vec<String> = hash(&b, &first).await.into_keys().collect();
    assert_eq!(ready, ["c", "m", "p", "pr", "ra", "s", "tg", "wf"]);
    let c = counts(&b, "wq").await;
    assert_eq!((c.waiting, c.pending), (1, 2));

    // Beyond the precision of a double, which a decode and re-encode in Lua would lose.
    let result = r#"{"n":12345678901234567890,"s":"é"}"#;
    complete(&b, "wq", first.id, result, at(2)).await;
    let delivered = hash(&b, &second).await;
    assert_eq!(
        (delivered["s"].as_str(), delivered["i0"].as_str()),
        ("p", result)
    );
    assert_eq!(delivered["wn"], "1");
    assert_eq!(delivered["ra"], at(2).timestamp_micros().to_string());
    let record = b.job(second.id).await.unwrap();
    assert_eq!(record.status, JobStatus::Pending);
    assert_eq!(record.inputs[&0].get(), result);
    let c = counts(&b, "wq").await;
    assert_eq!((c.waiting, c.pending, c.completed), (0, 1, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_across_queues_is_refused_on_a_cluster() {
    let b = cluster_backend().await;
    let (first, second) = chain("wc-a", "wc-b");
    let refused = put(&b, vec![first.clone(), second.clone()]).await;
    let Err(Error::Invalid(message)) = refused else {
        panic!("refused as invalid: {refused:?}");
    };
    assert!(
        message.contains("on Redis Cluster the steps of one workflow must share one queue"),
        "{message}"
    );
    for (queue, id) in [("wc-a", first.id), ("wc-b", second.id)] {
        assert_eq!(counts(&b, queue).await, QueueCounts::default(), "{queue}");
        assert!(matches!(b.job(id).await, Err(Error::NotFound(_))));
    }
    // The same workflow in one queue is stored.
    let (first, second) = chain("wc-a", "wc-a");
    put(&b, vec![first, second.clone()]).await.unwrap();
    let c = counts(&b, "wc-a").await;
    assert_eq!((c.pending, c.waiting), (1, 1));
    assert_eq!(b.job(second.id).await.unwrap().status, JobStatus::Waiting);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_across_queues_is_stored_all_or_nothing() {
    let b = single_backend().await;
    b.set_limits(SetLimitsParams {
        queue: "wb-full".into(),
        limits: QueueLimits::default().max_depth(1),
    })
    .await
    .unwrap();
    put(&b, vec![job("wb-full", t0())]).await.unwrap();
    // The first step goes to the full queue; the second, and 600 more steps (more than one
    // call would take of an ordinary batch), to an unbounded one.
    let (first, second) = chain("wb-full", "wb-open");
    let workflow = second.step.as_ref().unwrap().workflow;
    let mut batch = vec![first.clone(), second.clone()];
    batch.extend((0..600).map(|i| NewJob {
        step: Some(step(workflow, 2 + i, 1, Vec::new())),
        ..job("wb-open", t0())
    }));
    let refused = put(&b, batch.clone()).await;
    assert!(
        matches!(&refused, Err(Error::QueueFull { queue, max_depth: 1 }) if queue == "wb-full"),
        "{refused:?}"
    );
    assert_eq!(counts(&b, "wb-open").await, QueueCounts::default());
    assert_eq!(counts(&b, "wb-full").await.pending, 1);
    assert!(matches!(b.job(second.id).await, Err(Error::NotFound(_))));

    // With room, the whole batch is stored, and the delivery crosses the queues.
    b.set_limits(SetLimitsParams {
        queue: "wb-full".into(),
        limits: QueueLimits::default().max_depth(2),
    })
    .await
    .unwrap();
    let stored = put(&b, batch.clone()).await.unwrap();
    assert!(stored.iter().all(|e| !e.duplicate));
    assert_eq!(counts(&b, "wb-open").await.waiting, 601);
    assert_eq!(counts(&b, "wb-full").await.pending, 2);
    complete(&b, "wb-full", first.id, "[1,2]", at(2)).await;
    let moved = b.job(second.id).await.unwrap();
    assert_eq!(moved.status, JobStatus::Pending);
    assert_eq!(moved.inputs[&0].get(), "[1,2]");
    let c = counts(&b, "wb-open").await;
    assert_eq!((c.waiting, c.pending), (600, 1));
}

/// Applies `action` to the jobs `ids` at `now`; the ids it changed.
async fn manage(b: &RedisBackend, action: Action, ids: &[JobId], now: Timestamp) -> Vec<JobId> {
    let params = ManageParams {
        action,
        target: Target::Ids(ids.to_vec()),
        limit: ids.len(),
        now,
    };
    b.manage(params).await.unwrap().changed
}

/// The members of the sorted set `set` (`ready`, `kready` or `delayed`) of `queue`.
async fn members(b: &RedisBackend, queue: &str, set: &str) -> Vec<String> {
    let mut conn = raw_connection().await;
    redis::cmd("ZRANGE")
        .arg(format!("{{{}:{}}}:{}", b.key_prefix(), queue, set))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_retried_before_its_inputs_waits_again() {
    let b = single_backend().await;
    let (channel, _sink, mut messages) = wake_subscription(&b).await;

    let (first, second) = chain("wr", "wr");
    put(&b, vec![first.clone(), second.clone()]).await.unwrap();
    assert_eq!(signals(&mut messages, &channel).await, ["wr"]);
    assert_eq!(
        manage(&b, Action::Cancel, &[second.id], at(1)).await,
        [second.id]
    );
    assert_eq!(
        manage(&b, Action::Retry, &[second.id], at(2)).await,
        [second.id]
    );

    let stored = hash(&b, &second).await;
    assert_eq!((stored["s"].as_str(), stored["a"].as_str()), ("w", "0"));
    assert!(
        !stored.contains_key("f") && !stored.contains_key("wn"),
        "{stored:?}"
    );
    let member = second.id.0.simple().to_string();
    for set in ["ready", "kready", "delayed"] {
        let found = members(&b, "wr", set).await;
        assert!(
            !found.iter().any(|m| m.ends_with(&member)),
            "{set}: {found:?}"
        );
    }
    let c = counts(&b, "wr").await;
    assert_eq!((c.waiting, c.pending, c.cancelled), (1, 1, 0));
    assert!(
        signals(&mut messages, &channel).await.is_empty(),
        "no wake-up"
    );

    // Its input arrives: it runs. Retried once its slot is filled, it is pending at once.
    complete(&b, "wr", first.id, "7", at(3)).await;
    assert_eq!(b.job(second.id).await.unwrap().status, JobStatus::Pending);
    assert_eq!(signals(&mut messages, &channel).await, ["wr"]);
    assert_eq!(
        manage(&b, Action::Cancel, &[second.id], at(4)).await,
        [second.id]
    );
    assert_eq!(
        manage(&b, Action::Retry, &[second.id], at(5)).await,
        [second.id]
    );
    let record = b.job(second.id).await.unwrap();
    assert_eq!(record.status, JobStatus::Pending);
    assert_eq!(record.inputs[&0].get(), "7");
    let ready = members(&b, "wr", "ready").await;
    assert!(ready.iter().any(|m| m.ends_with(&member)), "{ready:?}");
    let c = counts(&b, "wr").await;
    assert_eq!((c.waiting, c.pending, c.cancelled), (0, 1, 0));
    assert_eq!(signals(&mut messages, &channel).await, ["wr"]);
}
