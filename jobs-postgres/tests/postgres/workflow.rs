//! Workflow steps in PostgreSQL: a schema at migration 8 that holds jobs is upgraded (they read
//! back as ordinary jobs), a workflow enqueued in the caller's transaction exists with it or not
//! at all, a step that becomes ready (by a completion, or as a compensation by a failure or a
//! rescue) wakes its queue's listeners, and the steps of a group completing at once on separate
//! connections both deliver to the steps after them.

use std::time::Duration;

use jobs_core::workflow::{Effect, Step, StepRole};
use jobs_core::{
    Backend, CompleteParams, Completion, CountsParams, CronTickParams, ErrorKind, ErrorReport,
    FailParams, Failure, JobId, JobRecord, JobStatus, KeyLimits, LeasedJob, NewJob, Producer,
    QueueLimits, ReadParams, RescueParams, RescueTarget, SetLimitsParams, SubscribeParams,
    WorkflowId,
};
use jobs_postgres::PgBackend;
use serde_json::value::RawValue;

use crate::support::{complete, fetch, fresh_backend, new_job, put, t0};

/// A step of `workflow` at `index`, waiting for `slots` inputs, with these effects.
fn step(
    workflow: WorkflowId,
    index: u32,
    slots: u32,
    on_complete: Vec<Effect>,
    on_dead: Vec<Effect>,
) -> Option<Box<Step>> {
    Some(Box::new(Step {
        workflow,
        index,
        role: StepRole::Step { stage: index },
        group: false,
        slots,
        input: None,
        on_complete,
        on_dead,
    }))
}

/// The chain `first` (queue `wa`) → `second` (queue `wb`, fed `first`'s result), tagged with
/// the workflow's tag; `first` dead cancels `second`.
fn chain() -> (WorkflowId, Vec<NewJob>) {
    let workflow = WorkflowId::new();
    let mut first = new_job("first", "wa");
    let mut second = new_job("second", "wb");
    first.step = step(
        workflow,
        0,
        0,
        vec![Effect::Deliver {
            job: second.id,
            queue: second.queue.clone(),
            slot: 0,
            result: true,
        }],
        vec![Effect::Cancel {
            job: second.id,
            queue: second.queue.clone(),
        }],
    );
    second.step = step(workflow, 1, 1, Vec::new(), Vec::new());
    for job in [&mut first, &mut second] {
        job.tags = vec![workflow.tag()];
    }
    (workflow, vec![first, second])
}

async fn read(backend: &PgBackend, id: JobId) -> Option<JobRecord> {
    backend.read(ReadParams { id }).await.expect("read")
}

async fn rows(backend: &PgBackend) -> i64 {
    sqlx::query_scalar(&format!(
        "SELECT count(*) FROM \"{}\".jobs",
        backend.schema_name()
    ))
    .fetch_one(backend.pool())
    .await
    .expect("count")
}

#[tokio::test]
async fn a_schema_at_migration_8_holding_jobs_is_upgraded_for_workflows() {
    let backend = fresh_backend().await;
    let schema = backend.schema_name().to_string();
    let mut later = new_job("e", "h");
    later.run_at = t0() + chrono::Duration::days(1);
    let ids = put(&backend, vec![new_job("e", "h"), later], t0()).await;
    // Back to what migrations 1 to 8 made, with the two jobs still stored (less the limited
    // fetches of migrations 10 and 11, which they create again, and the places of 18).
    sqlx::raw_sql(&format!(
        "SET search_path TO \"{schema}\";
         DROP FUNCTION fetch_limited(text[], timestamptz, int8, text, timestamptz, text[],
             int4[], int4[], int8[], bool[], bool[], int8, text, int4[], uuid[], uuid[]);
         DROP FUNCTION fetch_unkeyed(text[], timestamptz, int8, text, timestamptz, text[],
             int4[], int4[], int8[], bool[], text, int4[], uuid[], uuid[]);
         ALTER TABLE flow_started DROP COLUMN pruned_at;
         DROP TABLE flow_places, offers;
         DROP FUNCTION deliver_one;
         DROP INDEX jobs_waiting;
         ALTER TABLE jobs DROP COLUMN step, DROP COLUMN inputs;
         ALTER TABLE jobs DROP CONSTRAINT jobs_status_check;
         ALTER TABLE jobs ADD CONSTRAINT jobs_status_check CHECK (status IN
             ('scheduled', 'pending', 'running', 'completed', 'dead', 'cancelled'));
         DROP INDEX jobs_unique_key;
         CREATE UNIQUE INDEX jobs_unique_key ON jobs (queue, unique_key)
             WHERE unique_key IS NOT NULL AND status IN ('scheduled', 'pending', 'running');
         DELETE FROM _jobs_migrations WHERE version > 8;
         RESET search_path;"
    ))
    .execute(backend.pool())
    .await
    .expect("downgrade");
    let refused = sqlx::query(&format!(
        "UPDATE \"{schema}\".jobs SET status = 'waiting' WHERE id = $1"
    ))
    .bind(ids[0].0)
    .execute(backend.pool())
    .await;
    assert!(refused.is_err(), "migration 8 knows no waiting status");
    assert_eq!(backend.schema_version().await.unwrap(), Some(8));

    backend.migrate().await.expect("upgrade");
    assert_eq!(backend.schema_version().await.unwrap(), Some(21));
    for (id, status) in [(ids[0], JobStatus::Pending), (ids[1], JobStatus::Scheduled)] {
        let old = read(&backend, id).await.expect("kept");
        assert_eq!(old.status, status);
        assert!(
            old.step.is_none(),
            "a job stored before workflows is no step"
        );
        assert!(old.inputs.is_empty());
    }
    // The upgraded schema stores a workflow, its waiting step counted and holding its key.
    let (workflow, mut jobs) = chain();
    jobs[1].unique_key = Some("k".into());
    let second = jobs[1].id;
    put(&backend, jobs, t0()).await;
    let waiting = read(&backend, second).await.expect("stored");
    assert_eq!(waiting.status, JobStatus::Waiting);
    assert_eq!(waiting.step.as_ref().map(|s| s.workflow), Some(workflow));
    let counts = backend
        .counts(CountsParams { queue: "wb".into() })
        .await
        .expect("counts");
    assert_eq!((counts.waiting, counts.pending), (1, 0));
    let mut same_key = new_job("second", "wb");
    same_key.unique_key = Some("k".into());
    let again = backend
        .enqueue(jobs_core::EnqueueParams {
            jobs: vec![same_key],
            now: t0(),
        })
        .await
        .expect("enqueue");
    assert_eq!(
        (again[0].id, again[0].duplicate),
        (second, true),
        "a waiting step holds its unique key"
    );
}

#[tokio::test]
async fn a_workflow_enqueued_in_a_transaction_exists_with_it_or_not_at_all() {
    let backend = fresh_backend().await;
    let (_, jobs) = chain();
    let ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
    let mut tx = backend.pool().begin().await.unwrap();
    backend
        .on(&mut tx)
        .enqueue_jobs(jobs.clone(), t0())
        .await
        .expect("enqueue in the transaction");
    let inside = backend
        .on(&mut tx)
        .read_job(ids[1])
        .await
        .expect("read in the transaction")
        .expect("visible to its transaction");
    assert_eq!(inside.status, JobStatus::Waiting);
    tx.rollback().await.unwrap();
    assert_eq!(
        rows(&backend).await,
        0,
        "a rolled-back workflow stores nothing"
    );
    for id in &ids {
        assert!(read(&backend, *id).await.is_none());
    }

    let mut tx = backend.pool().begin().await.unwrap();
    let stored = backend
        .on(&mut tx)
        .enqueue_jobs(jobs.clone(), t0())
        .await
        .expect("enqueue in the transaction");
    assert_eq!(stored.iter().map(|e| e.id).collect::<Vec<_>>(), ids);
    tx.commit().await.unwrap();
    assert_eq!(
        rows(&backend).await,
        2,
        "a committed workflow stores every step"
    );
    for (job, status) in jobs.iter().zip([JobStatus::Pending, JobStatus::Waiting]) {
        let record = read(&backend, job.id).await.expect("stored");
        assert_eq!(record.status, status);
        assert_eq!(record.step, job.step, "the step reads back as enqueued");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_made_ready_by_a_completion_wakes_its_queue() {
    let backend = fresh_backend().await;
    let (_, jobs) = chain();
    let second = jobs[1].id;
    put(&backend, jobs, t0()).await;
    let wakeup = backend
        .subscribe(SubscribeParams {
            queues: vec!["wb".into()],
            worker: None,
        })
        .await
        .expect("subscribe");
    let first = fetch(&backend, "wa", 10, 1_000).await;
    assert_eq!(first.len(), 1);
    assert!(
        tokio::time::timeout(Duration::from_millis(200), wakeup.wait())
            .await
            .is_err(),
        "nothing is ready in wb yet"
    );
    assert_eq!(complete(&backend, &first, 2_000).await, [true]);
    assert!(
        tokio::time::timeout(Duration::from_secs(2), wakeup.wait())
            .await
            .is_ok(),
        "the completion that made the step ready woke its queue"
    );
    let ready = read(&backend, second).await.expect("stored");
    assert_eq!(ready.status, JobStatus::Pending);
    assert_eq!(ready.inputs[&0].get(), "1");
    assert_eq!(fetch(&backend, "wb", 10, 2_000).await.len(), 1);
}

/// Fails `leased` at `now_ms` with a fatal error, so that it is dead; the failure must apply.
async fn fail_for_good(backend: &PgBackend, leased: &LeasedJob, now_ms: i64) {
    let items = vec![Failure {
        lease: leased.lease(),
        error: ErrorReport::new(ErrorKind::Fatal, "no"),
        retry_at: None,
    }];
    let failed = backend
        .fail(FailParams {
            items,
            now: crate::support::at(now_ms),
        })
        .await
        .expect("fail");
    assert_eq!(failed, [true]);
}

/// A step that dies, by its failure or by a rescue of its lapsed lease, makes its compensation
/// ready, and that wakes the compensation's queue: the effects of `fail` and `rescue` go
/// through the schema's `apply_step_effects`, whose queues the statement notifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compensation_made_ready_by_a_dead_step_wakes_its_queue() {
    for rescued in [false, true] {
        let backend = fresh_backend().await;
        let workflow = WorkflowId::new();
        let mut first = new_job("first", "wa");
        first.max_attempts = 1;
        let mut undo = new_job("undo", "wc");
        first.step = step(workflow, 0, 0, Vec::new(), vec![deliver(&undo, 0)]);
        undo.step = step(workflow, 1, 1, Vec::new(), Vec::new());
        let undo_id = undo.id;
        put(&backend, vec![first, undo], t0()).await;
        let wakeup = backend
            .subscribe(SubscribeParams {
                queues: vec!["wc".into()],
                worker: None,
            })
            .await
            .expect("subscribe");
        let leased = fetch(&backend, "wa", 10, 1_000).await;
        assert_eq!(leased.len(), 1);
        if rescued {
            let ids = backend
                .rescue(RescueParams {
                    target: RescueTarget::Lapsed,
                    now: crate::support::at(120_000),
                    limit: 10,
                    error: ErrorReport::new(ErrorKind::LeaseLost, "lease lapsed"),
                })
                .await
                .expect("rescue");
            assert_eq!(ids, [leased[0].record.id]);
        } else {
            fail_for_good(&backend, &leased[0], 2_000).await;
        }
        assert!(
            tokio::time::timeout(Duration::from_secs(2), wakeup.wait())
                .await
                .is_ok(),
            "the dead step's compensation woke its queue (rescued: {rescued})"
        );
        let ready = read(&backend, undo_id).await.expect("stored");
        assert_eq!(ready.status, JobStatus::Pending, "rescued: {rescued}");
        assert_eq!(ready.inputs[&0].get(), "null", "rescued: {rescued}");
    }
}

#[tokio::test]
async fn a_dead_step_cancels_its_follower_and_counts_it() {
    let backend = fresh_backend().await;
    let (_, jobs) = chain();
    let second = jobs[1].id;
    put(&backend, jobs, t0()).await;
    let first = fetch(&backend, "wa", 10, 1_000).await;
    fail_for_good(&backend, &first[0], 2_000).await;
    let cancelled = read(&backend, second).await.expect("stored");
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    assert_eq!(cancelled.finished_at, Some(crate::support::at(2_000)));
    let counts = backend
        .counts(CountsParams { queue: "wb".into() })
        .await
        .expect("counts");
    assert_eq!((counts.waiting, counts.cancelled), (0, 1));
    let minutes: i64 = sqlx::query_scalar(&format!(
        "SELECT COALESCE(sum(n), 0)::int8 FROM \"{}\".finished_minutes WHERE queue = 'wb'",
        backend.schema_name()
    ))
    .fetch_one(backend.pool())
    .await
    .unwrap();
    assert_eq!(minutes, 1, "the cancel is in its minute's bucket");
}

/// A waiting step of a workflow of its own, in `queue`.
fn waiting_step(queue: &str) -> NewJob {
    let mut job = new_job("s", queue);
    job.step = step(WorkflowId::new(), 1, 1, Vec::new(), Vec::new());
    job
}

#[tokio::test]
async fn every_enqueue_path_stores_the_step() {
    let backend = fresh_backend().await;
    backend
        .set_limits(SetLimitsParams {
            queue: "bounded".into(),
            limits: QueueLimits::default().max_depth(10),
        })
        .await
        .expect("set limits");
    let mut unique = waiting_step("q");
    unique.unique_key = Some("u".into());
    let mut keyed = waiting_step("q");
    keyed.key_limits = Some(KeyLimits {
        key: "k".into(),
        concurrency: Some(1),
        rate: None,
    });
    // One job (enqueue_one.sql), a batch (enqueue_many.sql), a batch with a unique key
    // (enqueue.sql), a job with key limits and one into a bounded queue (guarded), cron.
    let batches = vec![
        vec![waiting_step("q")],
        vec![waiting_step("q"), waiting_step("q")],
        vec![unique, waiting_step("q")],
        vec![keyed],
        vec![waiting_step("bounded")],
    ];
    let mut expected = Vec::new();
    for batch in batches {
        expected.extend(batch.iter().map(|j| (j.id, j.step.clone())));
        put(&backend, batch, t0()).await;
    }
    let tick = waiting_step("q");
    expected.push((tick.id, tick.step.clone()));
    let stored = backend
        .enqueue_cron(CronTickParams {
            schedule: "tick".into(),
            tick: t0(),
            job: tick,
            now: t0(),
        })
        .await
        .expect("cron tick");
    assert_eq!(stored, Some(expected[expected.len() - 1].0));
    for (id, step) in expected {
        let record = read(&backend, id).await.expect("stored");
        assert_eq!(record.status, JobStatus::Waiting);
        assert!(step.is_some());
        assert_eq!(record.step, step, "job {id:?}");
    }
}

/// Completes `leased` at `now_ms` with `result` (JSON text), answering whether it applied.
async fn complete_with(backend: &PgBackend, leased: &LeasedJob, result: &str, now_ms: i64) -> bool {
    let done = backend
        .complete(CompleteParams {
            items: vec![Completion {
                lease: leased.lease(),
                result: RawValue::from_string(result.to_string()).unwrap(),
            }],
            now: crate::support::at(now_ms),
        })
        .await
        .expect("complete");
    done == [true]
}

/// A delivery of the step's result to slot `slot` of `to`.
fn deliver(to: &NewJob, slot: u32) -> Effect {
    Effect::Deliver {
        job: to.id,
        queue: to.queue.clone(),
        slot,
        result: true,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_two_steps_of_a_group_completing_at_once_both_deliver() {
    let backend = fresh_backend().await;
    for round in 0..20 {
        // A group of two steps (`a`, `b`), each feeding both followers: `a` names them in one
        // order and `b` in the other, so the two completions meet on both targets.
        let workflow = WorkflowId::new();
        let mut a = new_job("a", "group");
        let mut b = new_job("b", "group");
        let mut first = new_job("first", "next");
        let mut second = new_job("second", "next");
        for follower in [&mut first, &mut second] {
            follower.step = step(workflow, 1, 2, Vec::new(), Vec::new());
        }
        a.step = step(
            workflow,
            0,
            0,
            vec![deliver(&first, 0), deliver(&second, 0)],
            Vec::new(),
        );
        b.step = step(
            workflow,
            0,
            0,
            vec![deliver(&second, 1), deliver(&first, 1)],
            Vec::new(),
        );
        let followers = [first.id, second.id];
        put(&backend, vec![a, b, first, second], t0()).await;
        let leased = fetch(&backend, "group", 10, 1_000).await;
        assert_eq!(leased.len(), 2, "round {round}: both steps run");
        let (x, y) = tokio::join!(
            complete_with(&backend, &leased[0], r#"{"n":1E2}"#, 2_000),
            complete_with(
                &backend,
                &leased[1],
                "123456789012345678901234567890",
                2_000
            ),
        );
        assert!(x && y, "round {round}: both completions apply");
        let slot = |job: &LeasedJob| if &*job.record.name == "a" { 0 } else { 1 };
        for follower in followers {
            let record = read(&backend, follower).await.expect("stored");
            assert_eq!(record.status, JobStatus::Pending, "round {round}");
            assert_eq!(
                record.inputs.get(&slot(&leased[0])).map(|v| v.get()),
                Some(r#"{"n":1E2}"#),
                "round {round}"
            );
            assert_eq!(
                record.inputs.get(&slot(&leased[1])).map(|v| v.get()),
                Some("123456789012345678901234567890"),
                "round {round}"
            );
        }
        let ready = fetch(&backend, "next", 10, 3_000).await;
        assert_eq!(ready.len(), 2, "round {round}: both followers run");
        assert_eq!(complete(&backend, &ready, 4_000).await, [true, true]);
    }
}
