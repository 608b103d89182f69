//! The checks of a backend that delivers jobs to idle workers (see
//! [`FetchParams::deliver`](crate::FetchParams::deliver)): a fetch of one queue that finds
//! nothing offers the worker's idle places, and a job enqueued by itself into that queue, with
//! none ready before it, is leased straight to the worker and handed to its subscription,
//! without a fetch. A backend crate whose backend delivers runs them with
//! [`deliveries!`](crate::deliveries), beside its own checks of what only it can see (how offers
//! are stored, a corrupt delivery, a lost connection).
//!
//! Each check observes behaviour only: what is leased, to whom, and what a worker's
//! subscription receives. The helpers are public for a backend's own checks of deliveries.

use std::time::Duration;

use super::jobs::Echo;
use super::support::{new_job, real_now, t0, worker, Running, OTHER_QUEUE};
pub use super::support::{put, put_at, record, wait_for, QUEUE};
use crate::{
    AnyBackend, Backend, CompleteParams, Completion, EndDeliveriesParams, ErrorKind, ErrorReport,
    FetchParams, JobExt, JobId, JobRecord, JobStatus, KnownJob, LeasedJob, NewJob, PauseParams,
    QueueLimits, Rate, RescueParams, RescueTarget, SetLimitsParams, SubscribeParams, Wakeup,
};

/// The idle worker of the checks.
pub const WORKER: &str = "idle-worker";

/// Expands to one `#[test]` per check of this module, each on a fresh backend from `$make` (a
/// path to an `async fn() -> impl Backend` whose backend delivers). Invoke it inside a module
/// of its own.
#[macro_export]
macro_rules! deliveries {
    ($make:path) => {
        $crate::deliveries!(@tests $make;
            deliver_leases_new_jobs_to_an_idle_worker_one_per_place,
            deliver_stops_once_a_fetch_offers_nothing_or_leases,
            deliver_skips_jobs_the_worker_may_not_run_yet,
            deliver_skips_paused_and_limited_queues,
            deliver_stops_for_gone_workers_and_fetches_across_queues,
            deliver_ends_once_those_under_way_arrived,
            deliver_to_a_worker_gone_hands_the_job_back,
            deliver_starts_a_new_job_in_an_idle_worker_without_a_fetch,
        );
    };
    (@tests $make:path; $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                $crate::testing::run($make, |backend| {
                    ::std::boxed::Box::pin($crate::testing::deliveries::$check(backend))
                });
            }
        )*
    };
}

/// `worker`'s subscription to [`QUEUE`].
pub async fn subscribe(b: &impl Backend, worker: &str) -> Wakeup {
    let params = SubscribeParams {
        queues: vec![QUEUE.into()],
        worker: Some(worker.into()),
    };
    b.subscribe(params).await.expect("subscribe")
}

/// A job named `layout` at version 1 in [`QUEUE`], ready at `t0` (2030-01-01).
pub fn job() -> NewJob {
    new_job("layout")
}

/// A [`job`] whose payload holds `chars` characters of text.
pub fn job_of_length(chars: usize) -> NewJob {
    let text = format!(r#"{{"text":"{}"}}"#, "x".repeat(chars));
    NewJob {
        payload: super::support::json(&text),
        ..job()
    }
}

/// A fetch of [`QUEUE`] by `worker` of the jobs named `layout` up to version 1, at `t0`, with
/// leases of 60 s, offering `places`.
pub fn fetch(worker: &str, places: usize) -> FetchParams {
    FetchParams {
        ended: Vec::new(),
        known: Some(vec![KnownJob {
            name: "layout".into(),
            version: 1,
        }]),
        queues: vec![QUEUE.into()],
        limit: 10,
        worker: worker.into(),
        lease_for: Duration::from_secs(60),
        now: t0(),
        flow: Vec::new(),
        reserve: 0,
        deliver: places,
    }
}

/// The ids of `jobs`.
pub fn ids(jobs: &[LeasedJob]) -> Vec<JobId> {
    jobs.iter().map(|j| j.record.id).collect()
}

/// Fetches for `worker` (offering `places`); the ids it leased.
pub async fn fetched(b: &impl Backend, worker: &str, places: usize) -> Vec<JobId> {
    ids(&b.fetch(fetch(worker, places)).await.expect("fetch"))
}

/// A fetch by [`WORKER`] that finds nothing, and so offers `places`.
pub async fn offer(b: &impl Backend, places: usize) {
    assert_eq!(fetched(b, WORKER, places).await, [], "nothing to fetch");
}

/// Leases what waits in [`QUEUE`] to another worker, of any name, offering nothing.
pub async fn drain(b: &impl Backend) -> Vec<JobId> {
    let params = FetchParams {
        known: None,
        ..fetch("drainer", 0)
    };
    ids(&b.fetch(params).await.expect("fetch"))
}

/// Rescues the jobs of `worker`, gone.
pub async fn rescue_gone(b: &impl Backend, worker: &str) {
    let params = RescueParams {
        target: RescueTarget::Workers(vec![worker.into()]),
        now: t0(),
        limit: 100,
        error: ErrorReport::new(ErrorKind::LeaseLost, "gone"),
    };
    b.rescue(params).await.expect("rescue");
}

/// The jobs delivered to `wakeup` once some came, or none within a second. (A wake-up signal
/// wakes it too.)
pub async fn delivered(wakeup: &Wakeup) -> Vec<LeasedJob> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
    loop {
        let got = wakeup.delivered();
        if !got.is_empty() {
            return got;
        }
        if tokio::time::timeout_at(deadline, wakeup.wait())
            .await
            .is_err()
        {
            return got;
        }
    }
}

/// Whether a job waits unattempted and unleased.
pub fn pending_and_unleased(r: &JobRecord) -> bool {
    r.status == JobStatus::Pending && r.attempt == 0 && r.lease.is_none()
}

/// Job `id` waits to be fetched: pending, unattempted, unleased, and not delivered.
pub async fn assert_waits(b: &impl Backend, wakeup: &Wakeup, id: JobId) {
    let r = record(b, id).await;
    assert!(pending_and_unleased(&r), "job {id} should wait: {r:?}");
    assert_eq!(ids(&delivered(wakeup).await), [], "nothing delivered");
}

/// An idle worker offering two places gets the next two jobs enqueued, leased to it by the
/// enqueue (a real lease, which completes), each heard once and reading as the store does;
/// with no place left, the third waits to be fetched.
pub async fn deliver_leases_new_jobs_to_an_idle_worker_one_per_place(b: AnyBackend) {
    let wakeup = subscribe(&b, WORKER).await;
    offer(&b, 2).await;

    let first = put(&b, job()).await;
    let stored = record(&b, first).await;
    assert_eq!((stored.status, stored.attempt), (JobStatus::Running, 1));
    assert_eq!(
        stored.started_at,
        Some(stored.created_at),
        "leased by its enqueue"
    );
    let lease = stored.lease.clone().expect("leased");
    assert_eq!(&*lease.worker, WORKER);

    let got = delivered(&wakeup).await;
    let [one] = &got[..] else {
        panic!("one job delivered: {got:?}");
    };
    assert_eq!((one.record.id, one.token), (first, lease.token));
    assert_eq!(
        serde_json::to_value(&one.record).unwrap(),
        serde_json::to_value(&stored).unwrap(),
        "the delivery reads as the store does"
    );
    let done = b
        .complete(CompleteParams {
            items: vec![Completion {
                lease: one.lease(),
                result: super::support::json("1"),
            }],
            now: t0(),
        })
        .await
        .unwrap();
    assert_eq!(done, [true]);

    let second = put(&b, job()).await;
    let got = delivered(&wakeup).await;
    assert_eq!(ids(&got), [second]);
    assert_ne!(got[0].token, one.token, "each delivery has its own token");
    let third = put(&b, job()).await;
    assert_waits(&b, &wakeup, third).await;
}

/// A fetch that offers nothing withdraws the worker's offer, and so does one that leases jobs.
pub async fn deliver_stops_once_a_fetch_offers_nothing_or_leases(b: AnyBackend) {
    let wakeup = subscribe(&b, WORKER).await;
    offer(&b, 4).await;
    offer(&b, 0).await;
    let waits = put(&b, job()).await;
    assert_waits(&b, &wakeup, waits).await;

    // The worker takes it itself, offering places: the fetch leased a job, so none stands.
    assert_eq!(fetched(&b, WORKER, 4).await, [waits]);
    let next = put(&b, job()).await;
    assert_waits(&b, &wakeup, next).await;
}

/// No offer takes a job of a name the worker does not run, of a version newer than it runs, or
/// due later; nor one with a ready job before it (which would run first).
pub async fn deliver_skips_jobs_the_worker_may_not_run_yet(b: AnyBackend) {
    let wakeup = subscribe(&b, WORKER).await;
    offer(&b, 4).await;
    let other = put(
        &b,
        NewJob {
            name: "other".into(),
            ..job()
        },
    )
    .await;
    assert_waits(&b, &wakeup, other).await;
    let behind = put(&b, job()).await;
    assert_waits(&b, &wakeup, behind).await;
    assert_eq!(drain(&b).await.len(), 2);

    let newer = put(
        &b,
        NewJob {
            version: 2,
            ..job()
        },
    )
    .await;
    assert_waits(&b, &wakeup, newer).await;
    assert_eq!(drain(&b).await, [newer]);

    let later = NewJob {
        run_at: t0() + Duration::from_secs(3600),
        ..job()
    };
    let later = put(&b, later).await;
    let r = record(&b, later).await;
    assert_eq!((r.status, r.lease), (JobStatus::Scheduled, None));

    // The offer still stands: a job it may take goes to it.
    let id = put(&b, job()).await;
    assert_eq!(ids(&delivered(&wakeup).await), [id]);
}

/// A paused queue delivers nothing, nor one with a concurrency or a rate limit.
pub async fn deliver_skips_paused_and_limited_queues(b: AnyBackend) {
    let wakeup = subscribe(&b, WORKER).await;
    let pause = |paused| PauseParams {
        queue: QUEUE.into(),
        paused,
    };
    let limits = |limits| SetLimitsParams {
        queue: QUEUE.into(),
        limits,
    };
    offer(&b, 4).await;
    b.pause(pause(true)).await.unwrap();
    let paused = put(&b, job()).await;
    assert_waits(&b, &wakeup, paused).await;
    b.pause(pause(false)).await.unwrap();
    assert_eq!(drain(&b).await, [paused]);

    b.set_limits(limits(QueueLimits::default().concurrency(5)))
        .await
        .unwrap();
    let limited = put(&b, job()).await;
    assert_waits(&b, &wakeup, limited).await;
    assert_eq!(drain(&b).await, [limited]);
    let rate = Rate {
        limit: 5,
        period: Duration::from_secs(1),
    };
    b.set_limits(limits(QueueLimits::default().rate(rate)))
        .await
        .unwrap();
    let rated = put(&b, job()).await;
    assert_waits(&b, &wakeup, rated).await;
    assert_eq!(drain(&b).await, [rated]);

    b.set_limits(limits(QueueLimits::default())).await.unwrap();
    let free = put(&b, job()).await;
    assert_eq!(ids(&delivered(&wakeup).await), [free]);
}

/// A gone worker's offer goes when its jobs are rescued; a fetch across queues withdraws the
/// fetching worker's offer (such a worker offers nothing).
pub async fn deliver_stops_for_gone_workers_and_fetches_across_queues(b: AnyBackend) {
    let wakeup = subscribe(&b, WORKER).await;
    offer(&b, 2).await;
    rescue_gone(&b, WORKER).await;
    let after_rescue = put(&b, job()).await;
    assert_waits(&b, &wakeup, after_rescue).await;
    assert_eq!(drain(&b).await, [after_rescue]);

    offer(&b, 2).await;
    let across = FetchParams {
        queues: vec![QUEUE.into(), OTHER_QUEUE.into()],
        ..fetch(WORKER, 2)
    };
    assert_eq!(ids(&b.fetch(across).await.unwrap()), []);
    let after_across = put(&b, job()).await;
    assert_waits(&b, &wakeup, after_across).await;
}

/// Once `end_deliveries` returns, the deliveries made before it have reached the worker's
/// subscription, and none is made after it.
pub async fn deliver_ends_once_those_under_way_arrived(b: AnyBackend) {
    let wakeup = subscribe(&b, WORKER).await;
    offer(&b, 4).await;
    let sent = put(&b, job()).await;
    b.end_deliveries(EndDeliveriesParams {
        worker: WORKER.into(),
        queues: vec![QUEUE.into(), QUEUE.into()],
    })
    .await
    .unwrap();
    assert_eq!(ids(&wakeup.delivered()), [sent], "arrived without a wait");
    let after = put(&b, job()).await;
    assert_waits(&b, &wakeup, after).await;
}

/// A job delivered to a worker whose subscription is gone goes back to its queue, unattempted.
pub async fn deliver_to_a_worker_gone_hands_the_job_back(b: AnyBackend) {
    drop(subscribe(&b, WORKER).await);
    // Another subscription keeps the backend listening; the worker's own is gone.
    let _other = subscribe(&b, "another").await;
    offer(&b, 1).await;
    let id = put(&b, job()).await;
    wait_for(&b, id, "the job got there", pending_and_unleased).await;
    assert_eq!(drain(&b).await, [id]);
}

/// A real worker, idle, runs a job enqueued while it waits without fetching it (it starts when
/// it was created), and leaves no offer standing once stopped.
pub async fn deliver_starts_a_new_job_in_an_idle_worker_without_a_fetch(b: AnyBackend) {
    let running = Running::start(worker(&b).register::<Echo>().concurrency(2));
    // Long enough for its start and its first, empty, fetch.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let now = real_now();
    let echo = NewJob {
        name: "conformance.echo".into(),
        payload: super::support::json(r#"{"n":21}"#),
        run_at: now,
        ..job()
    };
    let id = put_at(&b, echo, now).await;
    let r = wait_for(&b, id, "the job got there", |r| {
        r.status == JobStatus::Completed
    })
    .await;
    assert_eq!(r.result.as_ref().map(|v| v.get()), Some("42"));
    assert_eq!(r.started_at, Some(r.created_at), "leased by its enqueue");
    running.stop().await.unwrap();

    let wakeup = subscribe(&b, "next").await;
    let late = Echo { n: 1 }.enqueue(&b).await.unwrap();
    let r = record(&b, late.id()).await;
    assert!(
        pending_and_unleased(&r),
        "taken after its worker stopped: {r:?}"
    );
    assert_eq!(ids(&wakeup.delivered()), []);
}
