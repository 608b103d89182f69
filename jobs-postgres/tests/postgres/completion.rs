//! The completion transaction: a handler's writes commit with its job's completion, or not at all.

use std::time::Duration;

use jobs_core::{
    Backend, BackendContext as _, Clock, Error, JobContext, JobError, JobExt, JobStatus,
    MemoryBackend, Operations, SystemClock, Worker,
};
use jobs_macros::job;
use jobs_postgres::{PgBackend, PostgresExt};
use serde::{Deserialize, Serialize};

use crate::support::fresh_backend;

/// What the handler does after its insert.
#[derive(
    Debug, Serialize, Deserialize, Clone, Copy, jobs_core::__private::schemars::JsonSchema,
)]
#[schemars(crate = "jobs_core::__private::schemars")]
enum Then {
    Succeed,
    Fail,
    LoseTheLease,
}

/// Records a shipment in the handler's transaction, then does what `then` says.
#[job(crate = "jobs_core", queue = "ship", attempts = 1)]
async fn ship(order: i64, then: Then, ctx: JobContext) -> Result<i64, JobError> {
    let mut tx = jobs_postgres::transaction(&ctx).await?;
    let backend = ctx.backend().postgres()?;
    record_shipment(&mut tx, backend, order).await?;
    match then {
        Then::Succeed => Ok(order),
        Then::Fail => Err(JobError::fatal("carrier refused the parcel")),
        Then::LoseTheLease => {
            backend.cancel(ctx.id()).await?;
            Ok(order)
        }
    }
}

/// Records a shipment of `order` in the handler's transaction.
async fn record_shipment(
    tx: &mut jobs_postgres::JobTransaction,
    backend: &PgBackend,
    order: i64,
) -> Result<(), JobError> {
    sqlx::query(&format!(
        "INSERT INTO \"{}\".shipments (order_id) VALUES ($1)",
        backend.schema_name()
    ))
    .bind(order)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

async fn shipments(backend: &PgBackend, order: i64) -> i64 {
    sqlx::query_scalar(&format!(
        "SELECT count(*) FROM \"{}\".shipments WHERE order_id = $1",
        backend.schema_name()
    ))
    .bind(order)
    .fetch_one(backend.pool())
    .await
    .expect("count shipments")
}

/// A fresh backend whose schema has the shipments table.
async fn with_shipments() -> PgBackend {
    let backend = fresh_backend().await;
    sqlx::query(&format!(
        "CREATE TABLE \"{}\".shipments (order_id bigint NOT NULL)",
        backend.schema_name()
    ))
    .execute(backend.pool())
    .await
    .expect("create shipments");
    backend
}

/// Runs one `Ship` job to its end and returns its status.
async fn run_ship(order: i64, then: Then) -> (PgBackend, JobStatus) {
    let backend = with_shipments().await;
    let handle = Ship::new(order, then)
        .enqueue(&backend)
        .await
        .expect("enqueue");
    let status = run_to_end(&backend, &handle).await;
    (backend, status)
}

/// Runs a worker of the `ship` queue until the job of `handle` has ended; its status.
async fn run_to_end<J: jobs_core::Job>(
    backend: &PgBackend,
    handle: &jobs_core::JobHandle<J>,
) -> JobStatus {
    let worker = Worker::new(backend.clone()).queues(["ship"]).cron(false);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(worker.run_until(async {
        let _ = stopped.await;
    }));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        let status = handle.status(backend).await.expect("status");
        if status.is_finished() {
            break status;
        }
        assert!(tokio::time::Instant::now() < deadline, "job still {status}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    // Give a refused completion time to roll back before looking.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let _ = stop.send(());
    running.await.expect("worker task").expect("worker");
    status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_writes_commit_with_the_completion() {
    let (backend, status) = run_ship(1, Then::Succeed).await;
    assert_eq!(status, JobStatus::Completed);
    assert_eq!(shipments(&backend, 1).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_writes_roll_back_when_it_fails_after_them() {
    let (backend, status) = run_ship(2, Then::Fail).await;
    assert_eq!(status, JobStatus::Dead);
    assert_eq!(shipments(&backend, 2).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_writes_roll_back_when_the_lease_was_lost() {
    let (backend, status) = run_ship(3, Then::LoseTheLease).await;
    assert_eq!(status, JobStatus::Cancelled);
    assert_eq!(shipments(&backend, 3).await, 0);
}

#[tokio::test]
async fn transaction_needs_a_postgres_job() {
    let memory = MemoryBackend::new();
    let handle = Ship::new(4, Then::Succeed).enqueue(&memory).await.unwrap();
    let leased = memory
        .fetch(jobs_core::FetchParams {
            ended: Vec::new(),
            known: None,
            queues: vec!["ship".into()],
            limit: 1,
            worker: "w".into(),
            lease_for: Duration::from_secs(5),
            now: SystemClock.now(),
            flow: Vec::new(),
            reserve: 0,
            deliver: 0,
        })
        .await
        .unwrap();
    assert_eq!(leased[0].record.id, handle.id());
    let ctx = JobContext::new(jobs_core::AnyBackend::new(memory), &leased[0]);
    let err = jobs_postgres::transaction(&ctx).await.unwrap_err();
    assert!(matches!(err, Error::Invalid(_)), "{err:?}");
}

/// The step after a shipment, in a queue of its own.
#[job(crate = "jobs_core", queue = "after_ship", attempts = 1)]
async fn confirm_shipment(order: i64) -> Result<(), JobError> {
    let _ = order;
    Ok(())
}

/// A step completed in its handler's transaction wakes the queue of the step it made ready,
/// after the commit (the transaction itself notifies no one: its commit waits for the WAL flush,
/// and would hold Postgres' notification lock meanwhile).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_completed_in_its_transaction_wakes_the_next_steps_queue() {
    let backend = with_shipments().await;
    let wakeup = backend
        .subscribe(jobs_core::SubscribeParams {
            queues: vec!["after_ship".into()],
            worker: None,
        })
        .await
        .expect("subscribe");
    let workflow = jobs_core::Workflow::start(Ship::new(4, Then::Succeed))
        .then::<ConfirmShipment>()
        .enqueue(&backend)
        .await
        .expect("enqueue the workflow");
    assert!(
        tokio::time::timeout(Duration::from_millis(200), wakeup.wait())
            .await
            .is_err(),
        "the second step waits"
    );
    let worker = Worker::new(backend.clone()).queues(["ship"]).cron(false);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(worker.run_until(async {
        let _ = stopped.await;
    }));
    assert!(
        tokio::time::timeout(Duration::from_secs(5), wakeup.wait())
            .await
            .is_ok(),
        "the completion that made the next step ready woke its queue"
    );
    let _ = stop.send(());
    running.await.expect("worker task").expect("worker");
    let status = workflow
        .status(&backend)
        .await
        .expect("read the workflow")
        .expect("stored");
    let steps: Vec<JobStatus> = status.steps.iter().map(|s| s.job.status).collect();
    assert_eq!(steps, [JobStatus::Completed, JobStatus::Pending]);
    assert_eq!(shipments(&backend, 4).await, 1);
}

/// Records a shipment in a first transaction, gives it up, and records the next order's in a
/// second.
#[job(crate = "jobs_core", queue = "ship", attempts = 1)]
async fn ship_again(order: i64, ctx: JobContext) -> Result<i64, JobError> {
    let backend = ctx.backend().postgres()?;
    let mut first = jobs_postgres::transaction(&ctx).await?;
    record_shipment(&mut first, backend, order).await?;
    drop(first);
    let mut second = jobs_postgres::transaction(&ctx).await?;
    record_shipment(&mut second, backend, order + 1).await?;
    Ok(order)
}

/// A second transaction of one attempt replaces the first, whose writes roll back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_transaction_replaces_the_first() {
    let backend = with_shipments().await;
    let handle = ShipAgain::new(20).enqueue(&backend).await.expect("enqueue");
    assert_eq!(run_to_end(&backend, &handle).await, JobStatus::Completed);
    assert_eq!(
        shipments(&backend, 20).await,
        0,
        "the first transaction's write"
    );
    assert_eq!(
        shipments(&backend, 21).await,
        1,
        "the second transaction's write"
    );
}

/// The orders whose `HoldOpen` handler started, once per start.
static HOLD_STARTS: std::sync::Mutex<Vec<i64>> = std::sync::Mutex::new(Vec::new());

/// Holds a pooled connection for well over its lease (its transaction open, or a long query
/// when `in_query`) before it records its shipment.
#[job(crate = "jobs_core", queue = "hold", attempts = 1)]
async fn hold_open(order: i64, in_query: bool, ctx: JobContext) -> Result<i64, JobError> {
    HOLD_STARTS.lock().unwrap().push(order);
    let backend = ctx.backend().postgres()?;
    if in_query {
        sqlx::query("SELECT pg_sleep(1.5)")
            .execute(backend.pool())
            .await?;
    }
    let mut tx = jobs_postgres::transaction(&ctx).await?;
    if !in_query {
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    record_shipment(&mut tx, backend, order).await?;
    Ok(order)
}

/// Two workers, each on a pool of two connections with more handlers than that, whose
/// handlers hold pooled connections for longer than the lease (in a transaction kept open, or
/// a long query): the leases are renewed on a connection of their own meanwhile, so every job
/// completes once, none given up as lost (renewed through the pool, every lease lapsed and
/// every job ended dead).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_are_renewed_while_handlers_hold_every_pooled_connection() {
    let first = with_shipments().await;
    let schema = first.schema_name().to_string();
    let orders = 100..104;
    let mut handles = Vec::new();
    for order in orders.clone() {
        let in_query = order % 2 == 1;
        let job = HoldOpen::new(order, in_query);
        handles.push(job.enqueue(&first).await.expect("enqueue"));
    }
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut runs = Vec::new();
    for _ in 0..2 {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(2)
            .connect(&crate::support::url())
            .await
            .expect("a pool");
        let backend = PgBackend::from_pool(pool).schema(&schema).expect("schema");
        let worker = Worker::new(backend)
            .queues(["hold"])
            .cron(false)
            .concurrency(4)
            .lease(Duration::from_millis(600));
        let mut stopped = stopped.clone();
        runs.push(tokio::spawn(worker.run_until(async move {
            let _ = stopped.wait_for(|s| *s).await;
        })));
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    for handle in &handles {
        let status = loop {
            let status = handle.status(&first).await.expect("status");
            if status.is_finished() || tokio::time::Instant::now() > deadline {
                break status;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let record = first.read(jobs_core::ReadParams { id: handle.id() }).await;
        assert_eq!(status, JobStatus::Completed, "{record:?}");
    }
    let _ = stop.send(true);
    for run in runs {
        run.await.expect("worker task").expect("worker");
    }
    let starts = HOLD_STARTS.lock().unwrap().clone();
    for order in orders {
        let started = starts.iter().filter(|s| **s == order).count();
        assert_eq!(started, 1, "order {order} started {started} times");
        assert_eq!(shipments(&first, order).await, 1, "order {order}");
    }
}
