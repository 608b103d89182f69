//! Deliveries: a fetch of one queue that finds nothing offers its worker's idle places, and an
//! enqueue of one ready job into a queue with none ready leases the job straight to such a
//! worker, which hears it on its subscription without a fetch. The checks every delivering
//! backend passes run from `jobs_core::testing::deliveries`; these are PostgreSQL's own (the
//! `offers` table, NOTIFY's limits, transactions, the producer's view of offers, the listener).

use std::time::Duration;

use jobs_core::{
    Backend, ErrorKind, FetchParams, JobExt, JobStatus, NewJob, QueueLimits, SetLimitsParams,
    SubscribeParams,
};
use jobs_postgres::PgBackend;

use jobs_core::testing::deliveries::{
    assert_waits, delivered, drain, fetch, fetched, job, job_of_length, offer,
    pending_and_unleased, put, put_at, record, rescue_gone, subscribe, wait_for, QUEUE, WORKER,
};

use crate::support::{backend_in, fresh_backend, t0, Record};

/// The offers standing in `b`'s schema: worker and places.
async fn offers(b: &PgBackend) -> Vec<(String, i32)> {
    sqlx::query_as(&format!(
        "SELECT worker, places FROM \"{}\".offers ORDER BY worker",
        b.schema_name()
    ))
    .fetch_all(b.pool())
    .await
    .unwrap()
}

/// An offer is a row of `offers`, taken place by place; a delivered record keeps the store's
/// microseconds whatever the producer's clock gave, and a fetch that leases withdraws the row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offer_is_a_row_taken_place_by_place() {
    let b = fresh_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    offer(&b, 2).await;
    assert_eq!(offers(&b).await, [(WORKER.to_string(), 2)]);

    let now = t0() + Duration::from_nanos(1_500);
    let first = put_at(
        &b,
        NewJob {
            run_at: now,
            ..job()
        },
        now,
    )
    .await;
    let stored = record(&b, first).await;
    assert_eq!(stored.started_at, Some(t0() + Duration::from_micros(1)));
    let lease = stored.lease.clone().expect("leased");
    assert_eq!(
        lease.expires_at,
        t0() + Duration::from_micros(1) + Duration::from_secs(60)
    );
    let got = delivered(&wakeup).await;
    assert_eq!(
        got.iter()
            .map(|j| serde_json::to_value(&j.record).unwrap())
            .collect::<Vec<_>>(),
        [serde_json::to_value(&stored).unwrap()],
        "the delivery reads as the store does"
    );
    assert_eq!(offers(&b).await, [(WORKER.to_string(), 1)]);

    let waits = put(
        &b,
        NewJob {
            name: "other".into(),
            ..job()
        },
    )
    .await;
    assert!(pending_and_unleased(&record(&b, waits).await));
    let mut all = fetch(WORKER, 2);
    all.known = None;
    assert_eq!(b.fetch(all).await.unwrap().len(), 1);
    assert_eq!(offers(&b).await, [], "the fetch withdrew the offer");
}

/// A worker's idle places stand in one queue at a time: an offer in another withdraws the
/// first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offer_in_another_queue_withdraws_the_first() {
    let b = fresh_backend().await;
    let _wakeup = subscribe(&b, WORKER).await;
    offer(&b, 4).await;
    let elsewhere = FetchParams {
        queues: vec!["e".into()],
        ..fetch(WORKER, 3)
    };
    assert!(b.fetch(elsewhere).await.unwrap().is_empty());
    let queues: Vec<(String, i32)> = sqlx::query_as(&format!(
        "SELECT queue, places FROM \"{}\".offers",
        b.schema_name()
    ))
    .fetch_all(b.pool())
    .await
    .unwrap();
    assert_eq!(queues, [("e".to_string(), 3)]);
}

/// An offer stands while its worker finds nothing, but its places are recounted: the worker's
/// idle places less the deliveries it has not heard of yet (here: made to another instance).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offer_counts_the_deliveries_on_their_way() {
    let b = fresh_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    let elsewhere = backend_in(b.schema_name()).await;
    let _listening = subscribe(&elsewhere, "another").await;

    offer(&b, 2).await;
    let first = put(&b, job()).await;
    assert_eq!(delivered(&wakeup).await.len(), 1);
    // Through the other instance, which heard nothing: one delivery is on its way, so of the
    // two places it says are idle, one is offered.
    assert!(fetched(&elsewhere, WORKER, 2).await.is_empty());
    assert_eq!(offers(&b).await, [(WORKER.to_string(), 1)]);
    // Through its own, which heard it: both places are offered again.
    offer(&b, 2).await;
    assert_eq!(offers(&b).await, [(WORKER.to_string(), 2)]);
    let second = put(&b, job()).await;
    let third = put(&b, job()).await;
    let fourth = put(&b, job()).await;
    for id in [first, second, third] {
        assert_eq!(record(&b, id).await.status, JobStatus::Running);
    }
    assert!(pending_and_unleased(&record(&b, fourth).await));
    assert_eq!(delivered(&wakeup).await.len(), 2);
}

/// A stopped worker's offers go when it is deregistered, and a gone one's before its jobs
/// are rescued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deregistering_or_rescuing_a_worker_withdraws_its_offers() {
    let b = fresh_backend().await;
    let _wakeup = subscribe(&b, WORKER).await;
    offer(&b, 2).await;
    b.deregister(jobs_core::DeregisterParams {
        worker: WORKER.into(),
    })
    .await
    .unwrap();
    assert_eq!(offers(&b).await, [], "went with the stopped worker");
    offer(&b, 2).await;
    rescue_gone(&b, WORKER).await;
    assert_eq!(offers(&b).await, [], "went with the gone worker");
}

/// What no offer takes here: a job too long for a notification (nor one behind it), and one
/// enqueued once the offer lapsed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_offer_takes_a_long_job_or_one_enqueued_once_it_lapsed() {
    let b = fresh_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    offer(&b, 4).await;

    let long = put(&b, job_of_length(7_000)).await;
    assert_waits(&b, &wakeup, long).await;
    // It holds the queue's ready set: an enqueue behind it is not delivered either.
    let behind = put(&b, job()).await;
    assert_waits(&b, &wakeup, behind).await;
    assert_eq!(drain(&b).await.len(), 2);

    // The offer lapses a lease's length after the fetch that made it.
    let late = put_at(&b, job(), t0() + Duration::from_secs(61)).await;
    assert_waits(&b, &wakeup, late).await;
    assert_eq!(drain(&b).await.len(), 1);

    // The offer still stands, whole, for a job enqueued in its time: the producer, which saw
    // none in time, stores the first plainly and delivers the next.
    let relearned = put(&b, job()).await;
    assert_waits(&b, &wakeup, relearned).await;
    assert_eq!(drain(&b).await.len(), 1);
    let id = put(&b, job()).await;
    assert_eq!(record(&b, id).await.status, JobStatus::Running);
}

/// A producer whose last enqueue into a queue saw no offer there stores its next job plainly
/// (which wakes the idle worker) and learns that an offer stands: the job after it is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_that_saw_no_offer_delivers_again_once_it_sees_one() {
    let b = fresh_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    let unseen = put(&b, job()).await;
    assert_eq!(drain(&b).await, [unseen]);

    offer(&b, 2).await;
    let plain = put(&b, job()).await;
    assert_waits(&b, &wakeup, plain).await;
    assert_eq!(drain(&b).await, [plain]);
    let next = put(&b, job()).await;
    let got = delivered(&wakeup).await;
    assert_eq!(got.iter().map(|j| j.record.id).collect::<Vec<_>>(), [next]);
}

/// A job enqueued in the caller's transaction is not delivered: the transaction would hold the
/// offer, and the job's lease, until it commits. One enqueued by itself is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_enqueued_in_a_transaction_waits_to_be_fetched() {
    let b = fresh_backend().await;
    let subscribed = b.subscribe(SubscribeParams {
        queues: vec!["record".into()],
        worker: Some(WORKER.into()),
    });
    let wakeup = subscribed.await.unwrap();
    let fetch_record = |worker: &str, places| FetchParams {
        queues: vec!["record".into()],
        known: None,
        ..fetch(worker, places)
    };
    assert!(b.fetch(fetch_record(WORKER, 2)).await.unwrap().is_empty());

    let mut tx = b.begin().await.unwrap();
    let in_tx = Record::new(1).enqueue(&mut tx).await.unwrap();
    tx.commit().await.unwrap();
    assert_waits(&b, &wakeup, in_tx.id()).await;
    let drained = b.fetch(fetch_record("drainer", 0)).await.unwrap();
    assert_eq!(drained.len(), 1);

    let alone = Record::new(2).enqueue(&b).await.unwrap();
    let got = delivered(&wakeup).await;
    assert_eq!(
        got.iter().map(|j| j.record.id).collect::<Vec<_>>(),
        [alone.id()]
    );
}

/// A job into a queue with a max depth takes the guarded path, which delivers nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounded_queue_delivers_nothing() {
    let b = fresh_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    offer(&b, 4).await;
    b.set_limits(SetLimitsParams {
        queue: QUEUE.into(),
        limits: QueueLimits::default().max_depth(10),
    })
    .await
    .unwrap();
    let bounded = put(&b, job()).await;
    assert_waits(&b, &wakeup, bounded).await;
}

/// Enqueues racing for an offer of three places: each place takes one job at most, and every
/// job is delivered (running, leased to the worker, heard) or waits to be fetched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_enqueues_take_no_more_places_than_offered() {
    let b = fresh_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    offer(&b, 3).await;
    let racing: Vec<_> = (0..12)
        .map(|_| {
            let b = b.clone();
            tokio::spawn(async move { put(&b, job()).await })
        })
        .collect();
    let mut ids = Vec::new();
    for enqueued in racing {
        ids.push(enqueued.await.unwrap());
    }
    let mut running = Vec::new();
    for &id in &ids {
        let r = record(&b, id).await;
        match r.status {
            JobStatus::Running => {
                assert_eq!(r.lease.as_ref().map(|l| &*l.worker), Some(WORKER));
                running.push(id);
            }
            _ => assert!(pending_and_unleased(&r), "{r:?}"),
        }
    }
    assert!((1..=3).contains(&running.len()), "{running:?}");
    let places = 3 - running.len() as i32;
    assert_eq!(offers(&b).await, [(WORKER.to_string(), places)]);
    let mut heard = Vec::new();
    while heard.len() < running.len() {
        let got = delivered(&wakeup).await;
        assert!(!got.is_empty(), "heard {heard:?} of {running:?}");
        heard.extend(got.iter().map(|j| j.record.id));
    }
    heard.sort();
    running.sort();
    assert_eq!(heard, running);
}

/// Sends `message` on `b`'s delivery channel, as the offer of [`WORKER`] names it.
async fn notify(b: &PgBackend, message: &str) {
    let channel: String = sqlx::query_scalar(&format!(
        "SELECT channel FROM \"{}\".offers WHERE worker = $1",
        b.schema_name()
    ))
    .bind(WORKER)
    .fetch_one(b.pool())
    .await
    .unwrap();
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(channel)
        .bind(message)
        .execute(b.pool())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_delivery_harms_no_other_and_a_corrupt_job_dies() {
    let b = fresh_backend().await;
    let wakeup = subscribe(&b, WORKER).await;

    // A job leased by a fetch, delivered with a record that does not decode: failed as dead,
    // as a fetch fails a corrupt job. (Enqueued elsewhere: this instance's next enqueue tries
    // to deliver.)
    let corrupt = put(&backend_in(b.schema_name()).await, job()).await;
    let leased = b.fetch(fetch(WORKER, 0)).await.unwrap();
    let job1 = &leased[0];
    offer(&b, 1).await;
    // Not JSON: ignored, and the channel still delivers.
    notify(&b, "not json {").await;
    let message = serde_json::json!({
        "w": WORKER,
        "q": QUEUE,
        "i": corrupt.0,
        "t": job1.token.0,
        "x": job1.record.lease.as_ref().unwrap().expires_at,
        "o": uuid::Uuid::new_v4(),
        "n": 1,
        "r": {"id": corrupt.0, "payload": "not a record"},
    });
    notify(&b, &message.to_string()).await;
    wait_for(&b, corrupt, "the job got there", |r| {
        r.status == JobStatus::Dead
    })
    .await;
    let r = record(&b, corrupt).await;
    assert_eq!(r.errors.len(), 1);
    assert_eq!(r.errors[0].kind, ErrorKind::Decode);
    assert!(
        wakeup.delivered().is_empty(),
        "nothing handed to the worker"
    );

    let good = put(&b, job()).await;
    let got = delivered(&wakeup).await;
    assert_eq!(got.iter().map(|j| j.record.id).collect::<Vec<_>>(), [good]);
}

/// The listener's connection killed, the instance's offers are withdrawn, and deliveries are
/// heard again once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_are_heard_again_after_the_listener_reconnects() {
    let b = fresh_backend().await;
    let wakeup = subscribe(&b, WORKER).await;
    offer(&b, 1).await;
    let name = format!("jobs-listener:{}", b.schema_name());
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
    )
    .bind(&name)
    .fetch_all(b.pool())
    .await
    .unwrap();
    assert_eq!(killed, [true]);
    for _ in 0..100 {
        let listening: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE application_name = $1 AND query LIKE 'LISTEN%'",
        )
        .bind(&name)
        .fetch_one(b.pool())
        .await
        .unwrap();
        if listening > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Deliveries made meanwhile were lost: the instance's offers are withdrawn.
    for _ in 0..100 {
        if offers(&b).await.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(offers(&b).await, []);
    // Its worker offers anew, and is delivered to.
    offer(&b, 1).await;
    let id = put(&b, job()).await;
    let got = delivered(&wakeup).await;
    assert_eq!(got.iter().map(|j| j.record.id).collect::<Vec<_>>(), [id]);
}

/// The checks every delivering backend passes (see `jobs_core::testing::deliveries`).
mod shared {
    jobs_core::deliveries!(crate::support::fresh_backend);
}
