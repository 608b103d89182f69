//! Flow control in the store: stored limits, fetches within concurrency and rate limits (per
//! queue and per key), bounded queues, throttle and debounce; each also under racing callers.

use std::collections::BTreeSet;
use std::future::Future;

use super::presence::{beat, worker_info};
use super::*;

/// Runs the racers at once, each on a task of its own; their outputs in order.
async fn race<T: Send + 'static>(
    racers: impl Iterator<Item = impl Future<Output = T> + Send + 'static>,
) -> Vec<T> {
    let tasks: Vec<_> = racers.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(tasks.len());
    for task in tasks {
        out.push(task.await.expect("racer"));
    }
    out
}

/// A sliding-window rate of `limit` starts per `ms` milliseconds.
fn rate(limit: u32, ms: u64) -> Rate {
    Rate::new(limit, Duration::from_millis(ms))
}

/// Stores `limits` for `queue`.
async fn limit(b: &AnyBackend, queue: &str, limits: QueueLimits) {
    b.set_limits(SetLimitsParams {
        queue: queue.to_string(),
        limits,
    })
    .await
    .expect("set limits");
}

/// What the store says fetches must enforce.
async fn flow(b: &AnyBackend) -> Vec<QueueFlow> {
    b.flow(FlowParams {}).await.expect("flow")
}

/// Fetches up to `limit` of `QUEUE`'s jobs at `now` as a worker does: with the flow the store
/// reports. Returns the ids leased.
async fn fetch_flowing(b: &AnyBackend, limit: usize, now: Timestamp) -> Vec<JobId> {
    let mut params = fetch_params(&[QUEUE], limit, now);
    params.flow = flow(b).await;
    let leased = b.fetch(params).await.expect("fetch");
    leased.iter().map(|j| j.record.id).collect()
}

/// Sets the places `worker`'s promoted jobs hold under `QUEUE`'s limit.
async fn hold(b: &AnyBackend, worker: &str, places: u32) {
    b.hold_places(PlacesParams {
        worker: worker.to_string(),
        queue: QUEUE.to_string(),
        places,
    })
    .await
    .expect("hold places");
}

/// A job of `QUEUE` sharing `limits` with the other jobs of `key`.
fn keyed(key: &str, concurrency: Option<u32>, rate: Option<Rate>) -> NewJob {
    let mut job = new_job("keyed");
    job.key_limits = Some(KeyLimits {
        key: key.to_string(),
        concurrency,
        rate,
    });
    job
}

/// Enqueues `job` at `now`: its id, or the error.
async fn try_put(
    b: &AnyBackend,
    jobs: Vec<NewJob>,
    now: Timestamp,
) -> Result<Vec<Enqueued>, Error> {
    b.enqueue(EnqueueParams { jobs, now }).await
}

/// Limits are stored per queue and replaced whole; clearing them unlists the queue, and a
/// queue into which keyed jobs were enqueued is listed as keyed, limits or not.
pub async fn flow_stores_limits_per_queue(b: AnyBackend) {
    assert_eq!(flow(&b).await, []);
    let first = QueueLimits::default().concurrency(2).rate(rate(10, 1_000));
    limit(&b, QUEUE, first).await;
    limit(&b, OTHER_QUEUE, QueueLimits::default().max_depth(5)).await;
    let listed = |queue: &str, limits: QueueLimits, keyed: bool| QueueFlow {
        queue: queue.to_string(),
        limits,
        keyed,
    };
    assert_eq!(
        flow(&b).await,
        [
            listed(QUEUE, first, false),
            listed(OTHER_QUEUE, QueueLimits::default().max_depth(5), false)
        ]
    );
    let replaced = QueueLimits::default().max_depth(100);
    limit(&b, QUEUE, replaced).await;
    limit(&b, OTHER_QUEUE, QueueLimits::default()).await;
    assert_eq!(flow(&b).await, [listed(QUEUE, replaced, false)]);

    let mut job = keyed("customer:1", Some(1), None);
    job.queue = "conformance-keyed".into();
    let id = put(&b, job).await;
    assert_eq!(
        flow(&b).await,
        [
            listed(QUEUE, replaced, false),
            listed("conformance-keyed", QueueLimits::default(), true)
        ]
    );
    assert_eq!(
        record(&b, id).await.key_limits,
        Some(KeyLimits {
            key: "customer:1".into(),
            concurrency: Some(1),
            rate: None
        }),
        "key limits read back as enqueued"
    );
}

/// On a backend that reserves: a fetch of a queue with a concurrency leases within it first,
/// then reserves the next ready jobs, in order, up to its `reserve` plus the jobs it leased
/// within the limit and its `limit` in all. No limit counts a reserved lease; the places a
/// worker's promoted jobs hold count as running jobs, until it gives them up, deregisters, its
/// heartbeat expires, or a rescue of its jobs as a gone worker drops them; a queue with a rate
/// reserves nothing.
pub async fn fetch_reserves_beyond_a_queues_concurrency(b: AnyBackend) {
    if !b.reserves() {
        return;
    }
    limit(&b, QUEUE, QueueLimits::default().concurrency(2)).await;
    let ids = put_many(&b, (0..10).map(|_| new_job("reserved")), t0()).await;
    let mut params = fetch_params(&[QUEUE], 5, t0());
    params.flow = flow(&b).await;
    params.reserve = 2;
    let leased = b.fetch(params.clone()).await.expect("fetch");
    let got: Vec<(JobId, bool)> = leased.iter().map(|j| (j.record.id, j.reserved)).collect();
    assert_eq!(
        got,
        [
            (ids[0], false),
            (ids[1], false),
            (ids[2], true),
            (ids[3], true),
            (ids[4], true)
        ],
        "two within the limit, then up to the reserve (2) plus those two, five in all"
    );
    assert_eq!(
        counts(&b).await.running,
        5,
        "reserved jobs run under their leases"
    );
    assert_eq!(
        fetch_flowing(&b, 5, t0()).await,
        [],
        "the two within the limit fill it; the reserved ones do not count"
    );

    assert!(complete(&b, &leased[0], "null", t0()).await);
    hold(&b, "checker", 1).await;
    assert_eq!(
        fetch_flowing(&b, 5, t0()).await,
        [],
        "the place the completed job handed on to a reserved one counts in its stead"
    );
    assert!(complete(&b, &leased[1], "null", t0()).await);
    assert_eq!(
        fetch_flowing(&b, 5, t0()).await,
        [ids[5]],
        "one place left: the other reserved jobs still count for nothing"
    );
    hold(&b, "checker", 0).await;
    assert_eq!(
        fetch_flowing(&b, 5, t0()).await,
        [ids[6]],
        "a place given up is free"
    );

    hold(&b, "other", 1).await;
    hold(&b, "checker", 1).await;
    b.rescue(RescueParams {
        target: RescueTarget::Workers(vec!["checker".into()]),
        now: t0(),
        limit: 100,
        error: ErrorReport::worker_gone(),
    })
    .await
    .expect("rescue");
    assert_eq!(
        fetch_flowing(&b, 5, t0()).await.len(),
        1,
        "the rescue of a gone worker drops its places; another worker's place still counts"
    );
    b.deregister(DeregisterParams {
        worker: "other".into(),
    })
    .await
    .expect("deregister");
    assert_eq!(
        fetch_flowing(&b, 5, t0()).await.len(),
        1,
        "a worker that stopped holds no place"
    );

    limit(&b, QUEUE, QueueLimits::default().concurrency(3)).await;
    beat(&b, worker_info("stale", t0()), t0(), at(1_000)).await;
    hold(&b, "stale", 1).await;
    assert_eq!(
        fetch_flowing(&b, 5, t0()).await,
        [],
        "two running and a place: three, the limit"
    );
    beat(&b, worker_info("beating", t0()), at(2_000), at(5_000)).await;
    assert_eq!(
        fetch_flowing(&b, 5, t0()).await.len(),
        1,
        "a worker whose heartbeat expired is forgotten with its places"
    );

    limit(
        &b,
        QUEUE,
        QueueLimits::default()
            .concurrency(10)
            .rate(rate(100, 1_000)),
    )
    .await;
    params.flow = flow(&b).await;
    let leased = b.fetch(params).await.expect("fetch");
    assert!(
        leased.iter().all(|j| !j.reserved),
        "a queue with a rate reserves nothing"
    );
}

/// A queue's concurrency caps its running jobs: a fetch leases only up to it, and each job that
/// leaves running (completed, failed, handed back) makes room for one more. The jobs held back
/// keep their place and spend no attempt.
pub async fn fetch_holds_a_queues_concurrency(b: AnyBackend) {
    limit(&b, QUEUE, QueueLimits::default().concurrency(3)).await;
    let ids = put_many(&b, (0..10).map(|_| new_job("capped")), t0()).await;
    let first = fetch_flowing(&b, 10, t0()).await;
    assert_eq!(first, ids[..3], "the first three, in order");
    assert_eq!(fetch_flowing(&b, 10, t0()).await, [], "three are running");
    assert_eq!(record(&b, ids[3]).await.attempt, 0, "no attempt spent");

    let leased = |id: JobId| {
        let b = b.clone();
        async move {
            let r = record(&b, id).await;
            LeasedJob {
                token: r.lease.as_ref().expect("running").token,
                record: r,
                reserved: false,
            }
        }
    };
    assert!(complete(&b, &leased(ids[0]).await, "null", t0()).await);
    assert_eq!(fetch_flowing(&b, 10, t0()).await, [ids[3]]);
    assert!(fail(&b, &leased(ids[1]).await, "again", Some(at(60_000)), t0()).await);
    assert_eq!(fetch_flowing(&b, 10, t0()).await, [ids[4]]);
    let release = ReleaseParams {
        items: vec![Release {
            lease: leased(ids[2]).await.lease(),
            run_at: None,
        }],
        now: t0(),
    };
    assert_eq!(b.release(release).await.expect("release"), [true]);
    assert_eq!(
        fetch_flowing(&b, 10, t0()).await,
        [ids[2]],
        "the handed-back job keeps its place"
    );
    assert_eq!(counts(&b).await.running, 3);

    limit(&b, QUEUE, QueueLimits::default().concurrency(5)).await;
    assert_eq!(
        fetch_flowing(&b, 10, t0()).await,
        ids[5..7],
        "a raised limit"
    );
}

/// A queue's rate is a sliding window: starts older than the period stop counting, whatever
/// happened to the jobs since.
pub async fn fetch_holds_a_queues_rate(b: AnyBackend) {
    limit(&b, QUEUE, QueueLimits::default().rate(rate(5, 1_000))).await;
    let ids = put_many(&b, (0..20).map(|_| new_job("rated")), t0()).await;
    assert_eq!(fetch_flowing(&b, 2, t0()).await, ids[..2]);
    assert_eq!(fetch_flowing(&b, 10, at(600)).await, ids[2..5]);
    for id in &ids[..5] {
        let r = record(&b, *id).await;
        let job = LeasedJob {
            token: r.lease.as_ref().expect("running").token,
            record: r,
            reserved: false,
        };
        assert!(complete(&b, &job, "null", at(700)).await);
    }
    assert_eq!(
        fetch_flowing(&b, 10, at(999)).await,
        [],
        "finished jobs' starts still count"
    );
    assert_eq!(
        fetch_flowing(&b, 10, at(1_000)).await,
        ids[5..7],
        "the two starts of t0 left the window"
    );
    assert_eq!(fetch_flowing(&b, 10, at(1_599)).await, []);
    assert_eq!(fetch_flowing(&b, 10, at(1_600)).await, ids[7..10]);
    assert_eq!(
        record(&b, ids[10]).await.attempt,
        0,
        "a job over the rate spends no attempt"
    );
}

/// Jobs with key limits share them per key within their queue: a saturated key holds back only
/// its own jobs, and the fetch takes later jobs of other keys and unkeyed jobs.
pub async fn fetch_holds_each_keys_limits(b: AnyBackend) {
    let a: Vec<JobId> = put_many(&b, (0..3).map(|_| keyed("a", Some(1), None)), t0()).await;
    let bee = put_many(&b, (0..3).map(|_| keyed("b", Some(2), None)), t0()).await;
    let free = put_many(&b, (0..2).map(|_| new_job("free")), t0()).await;
    let rated = put_many(
        &b,
        (0..4).map(|_| keyed("c", None, Some(rate(2, 1_000)))),
        t0(),
    )
    .await;
    let mut other = keyed("a", Some(1), None);
    other.queue = OTHER_QUEUE.into();
    let other = put(&b, other).await;

    let mut expected = vec![a[0], bee[0], bee[1], free[0], free[1], rated[0], rated[1]];
    assert_eq!(fetch_flowing(&b, 20, t0()).await, expected);
    assert_eq!(fetch_flowing(&b, 20, t0()).await, []);
    let mut params = fetch_params(&[OTHER_QUEUE], 5, t0());
    params.flow = flow(&b).await;
    let got: Vec<JobId> = b
        .fetch(params)
        .await
        .expect("fetch")
        .iter()
        .map(|j| j.record.id)
        .collect();
    assert_eq!(got, [other], "keys are per queue");

    let r = record(&b, a[0]).await;
    let job = LeasedJob {
        token: r.lease.as_ref().expect("running").token,
        record: r,
        reserved: false,
    };
    assert!(complete(&b, &job, "null", at(10)).await);
    assert_eq!(fetch_flowing(&b, 20, at(10)).await, [a[1]]);
    expected = vec![rated[2], rated[3]];
    assert_eq!(
        fetch_flowing(&b, 20, at(1_000)).await,
        expected,
        "key c's rate window moved on"
    );
    assert_eq!(record(&b, a[2]).await.attempt, 0);
}

/// Fetches up to `limit` of `queue`'s jobs at `now` with the flow the store reports, telling
/// it that the attempts under `ended` have ended.
async fn fetch_ended(
    b: &AnyBackend,
    queue: &str,
    ended: &[LeaseRef],
    limit: usize,
    now: Timestamp,
) -> Vec<LeasedJob> {
    let mut params = fetch_params(&[queue], limit, now);
    params.flow = flow(b).await;
    params.ended = ended
        .iter()
        .map(|lease| EndedLease {
            queue: queue.to_string(),
            lease: *lease,
        })
        .collect();
    b.fetch(params).await.expect("fetch")
}

/// The ids of `jobs`.
fn ids_of(jobs: &[LeasedJob]) -> Vec<JobId> {
    jobs.iter().map(|j| j.record.id).collect()
}

/// A running job under one of the fetching worker's ended leases counts against no queue's
/// concurrency, as long as it runs under that very lease: a stale token, a job whose completion
/// was written meanwhile, or a lease listed twice frees no second place.
pub async fn fetch_leaves_ended_leases_out_of_a_queues_concurrency(b: AnyBackend) {
    limit(&b, QUEUE, QueueLimits::default().concurrency(2)).await;
    let ids = put_many(&b, (0..6).map(|_| new_job("capped")), t0()).await;
    let first = fetch_ended(&b, QUEUE, &[], 10, t0()).await;
    assert_eq!(ids_of(&first), ids[..2]);
    let ended = [first[0].lease(), first[0].lease()];
    let second = fetch_ended(&b, QUEUE, &ended, 10, t0()).await;
    assert_eq!(ids_of(&second), [ids[2]], "the ended job is left out, once");
    assert_eq!(counts(&b).await.running, 3, "it still runs in the store");
    let ended = [first[0].lease(), second[0].lease()];
    assert_eq!(
        ids_of(&fetch_ended(&b, QUEUE, &ended, 10, t0()).await),
        [ids[3]]
    );

    let stale = LeaseRef {
        id: ids[1],
        token: LeaseToken::new(),
    };
    let ended = [first[0].lease(), second[0].lease(), stale];
    assert_eq!(
        fetch_ended(&b, QUEUE, &ended, 10, t0()).await.len(),
        0,
        "a lease the job no longer runs under frees nothing"
    );
    assert!(complete(&b, &first[0], "null", t0()).await);
    let ended = [first[0].lease(), second[0].lease()];
    assert_eq!(
        fetch_ended(&b, QUEUE, &ended, 10, t0()).await.len(),
        0,
        "a completed job's lease frees no second place"
    );
    assert_eq!(record(&b, ids[4]).await.attempt, 0, "no attempt spent");
}

/// A running job under one of the fetching worker's ended leases counts against no key's
/// concurrency, as long as it runs under that very lease.
pub async fn fetch_leaves_ended_leases_out_of_a_keys_concurrency(b: AnyBackend) {
    let keyed_ids = put_many(
        &b,
        (0..3).map(|_| {
            let mut job = keyed("k", Some(1), None);
            job.queue = OTHER_QUEUE.into();
            job
        }),
        t0(),
    )
    .await;
    let k0 = fetch_ended(&b, OTHER_QUEUE, &[], 10, t0()).await;
    assert_eq!(ids_of(&k0), [keyed_ids[0]]);
    let k1 = fetch_ended(&b, OTHER_QUEUE, &[k0[0].lease()], 10, t0()).await;
    assert_eq!(
        ids_of(&k1),
        [keyed_ids[1]],
        "the key's ended job is left out"
    );
    assert_eq!(
        fetch_ended(&b, OTHER_QUEUE, &[k1[0].lease()], 10, t0())
            .await
            .len(),
        0,
        "the key's other job still counts"
    );
}

/// Racing fetchers never lease beyond a concurrency, a rate or a key's concurrency.
pub async fn fetch_racing_holds_the_limits(b: AnyBackend) {
    limit(&b, QUEUE, QueueLimits::default().concurrency(5)).await;
    limit(
        &b,
        OTHER_QUEUE,
        QueueLimits::default().rate(rate(7, 60_000)),
    )
    .await;
    put_many(&b, (0..60).map(|_| new_job("raced")), t0()).await;
    let others = (0..60).map(|_| {
        let mut job = new_job("raced");
        job.queue = OTHER_QUEUE.into();
        job
    });
    put_many(&b, others, t0()).await;
    let mut keyed_jobs: Vec<NewJob> = (0..60).map(|_| keyed("k", Some(2), None)).collect();
    for job in &mut keyed_jobs {
        job.queue = "conformance-keyed".into();
    }
    put_many(&b, keyed_jobs, t0()).await;
    let flow = flow(&b).await;

    let racers = (0..8).map(|i| {
        let b = b.clone();
        let flow = flow.clone();
        async move {
            let mut params = fetch_params(&[QUEUE, OTHER_QUEUE, "conformance-keyed"], 4, at(i));
            params.flow = flow;
            let mut got = Vec::new();
            for _ in 0..5 {
                got.extend(b.fetch(params.clone()).await.expect("fetch"));
            }
            got
        }
    });
    let leased: Vec<LeasedJob> = race(racers).await.into_iter().flatten().collect();
    let per_queue = |queue: &str| leased.iter().filter(|j| *j.record.queue == *queue).count();
    assert_eq!(per_queue(QUEUE), 5, "the concurrency");
    assert_eq!(per_queue(OTHER_QUEUE), 7, "the rate");
    assert_eq!(per_queue("conformance-keyed"), 2, "the key's concurrency");
}

/// A bounded queue refuses an enqueue whose new jobs would take its waiting jobs (pending and
/// scheduled) beyond its maximum, storing nothing of the batch; duplicates need no room, and a
/// job that starts makes room.
pub async fn enqueue_refuses_beyond_max_depth(b: AnyBackend) {
    limit(&b, QUEUE, QueueLimits::default().max_depth(3)).await;
    let mut unique = new_job("bounded");
    unique.unique_key = Some("once".into());
    let held = put(&b, unique.clone()).await;
    let mut later = new_job("bounded");
    later.run_at = at(60_000);
    put(&b, later).await;
    let full = |e: Result<Vec<Enqueued>, Error>| matches!(e, Err(Error::QueueFull { ref queue, max_depth: 3 }) if queue == QUEUE);
    let batch = vec![new_job("bounded"), new_job("bounded")];
    let ids: Vec<JobId> = batch.iter().map(|j| j.id).collect();
    assert!(
        full(try_put(&b, batch, t0()).await),
        "two more would make four"
    );
    for id in ids {
        assert!(read(&b, id).await.is_none(), "nothing of the batch stored");
    }
    let mut other = new_job("elsewhere");
    other.queue = OTHER_QUEUE.into();
    let mixed = vec![other.clone(), new_job("bounded"), new_job("bounded")];
    assert!(full(try_put(&b, mixed, t0()).await));
    assert!(
        read(&b, other.id).await.is_none(),
        "nor its other queue's job"
    );

    put(&b, new_job("bounded")).await;
    assert!(full(try_put(&b, vec![new_job("bounded")], t0()).await));
    unique.id = JobId::new();
    let again = try_put(&b, vec![unique], t0()).await.expect("a duplicate");
    assert_eq!((again[0].id, again[0].duplicate), (held, true));
    let c = counts(&b).await;
    assert_eq!((c.pending, c.scheduled), (2, 1));

    assert_eq!(fetch(&b, 1, t0()).await.len(), 1);
    put(&b, new_job("bounded")).await;
    assert!(full(try_put(&b, vec![new_job("bounded")], t0()).await));
    limit(&b, QUEUE, QueueLimits::default()).await;
    put(&b, new_job("bounded")).await;
}

/// Racing enqueues fill a bounded queue exactly to its maximum.
pub async fn enqueue_racing_never_overfills(b: AnyBackend) {
    limit(&b, QUEUE, QueueLimits::default().max_depth(25)).await;
    let racers = (0..8).map(|_| {
        let b = b.clone();
        async move {
            let mut outcomes = Vec::new();
            for _ in 0..6 {
                outcomes.push(try_put(&b, vec![new_job("raced")], t0()).await);
            }
            outcomes
        }
    });
    let outcomes: Vec<Result<Vec<Enqueued>, Error>> =
        race(racers).await.into_iter().flatten().collect();
    let stored = outcomes.iter().filter(|o| o.is_ok()).count();
    let refused = outcomes
        .iter()
        .filter(|o| matches!(o, Err(Error::QueueFull { .. })))
        .count();
    assert_eq!((stored, refused), (25, 23));
    assert_eq!(counts(&b).await.pending, 25);
}

/// Throttling keeps the first job of each window: within it an enqueue with the key returns
/// that job, whatever became of it, and stores nothing; after it, the next job starts a window.
pub async fn enqueue_throttles_to_the_first_job_of_a_window(b: AnyBackend) {
    let throttled = |key: &str, n: u32| {
        let mut job = new_job("throttled");
        job.payload = json(&format!(r#"{{"n":{n}}}"#));
        job.coalesce = Some(Coalesce::Throttle {
            key: key.to_string(),
            window: Duration::from_secs(1),
        });
        job
    };
    let first = put_at(&b, throttled("k", 1), t0()).await;
    let stored = try_put(&b, vec![throttled("k", 2), throttled("k", 3)], at(500))
        .await
        .expect("enqueue");
    assert!(stored.iter().all(|e| e.id == first && e.duplicate));
    let job = fetch_one(&b, at(600)).await;
    assert!(complete(&b, &job, "null", at(700)).await);
    let during = try_put(&b, vec![throttled("k", 4)], at(999))
        .await
        .expect("enqueue");
    assert_eq!(
        (during[0].id, during[0].duplicate),
        (first, true),
        "even once completed"
    );
    assert_eq!(
        value(&record(&b, first).await.payload)["n"],
        1,
        "the first payload kept"
    );
    let other = put_at(&b, throttled("other", 5), at(999)).await;
    assert_ne!(other, first);
    let next = put_at(&b, throttled("k", 6), at(1_000)).await;
    assert_ne!(next, first, "a new window");
    let dup = try_put(&b, vec![throttled("k", 7)], at(1_999))
        .await
        .expect("enqueue");
    assert_eq!(dup[0].id, next);

    let racers = (0..8).map(|i| {
        let b = b.clone();
        async move { try_put(&b, vec![throttled("raced", i)], at(5_000)).await }
    });
    let ids: BTreeSet<JobId> = race(racers)
        .await
        .into_iter()
        .map(|r| r.expect("enqueue")[0].id)
        .collect();
    assert_eq!(ids.len(), 1, "racing throttled enqueues store one job");
}

/// Debouncing folds an enqueue into its key's waiting job: the payload (with its version)
/// replaced, the run time pushed back; once that job runs, the next enqueue stores a new one.
pub async fn enqueue_debounces_into_the_waiting_job(b: AnyBackend) {
    let debounced = |n: u32, now_ms: i64| {
        let mut job = new_job("debounced");
        job.payload = json(&format!(r#"{{"n":{n}}}"#));
        job.run_at = at(now_ms + 1_000);
        job.coalesce = Some(Coalesce::Debounce {
            key: "d".into(),
            window: Duration::from_secs(1),
        });
        job
    };
    let first = put_at(&b, debounced(1, 0), t0()).await;
    assert_eq!(record(&b, first).await.status, JobStatus::Scheduled);
    let mut newer = debounced(3, 300);
    newer.version = 2;
    let folded = try_put(&b, vec![debounced(2, 300), newer], at(300))
        .await
        .expect("enqueue");
    assert!(folded.iter().all(|e| e.id == first && e.duplicate));
    let r = record(&b, first).await;
    assert_eq!(
        (value(&r.payload)["n"].clone(), r.version, r.run_at),
        (3.into(), 2, at(1_300))
    );
    assert_eq!(fetch(&b, 5, at(1_000)).await.len(), 0, "pushed back");
    assert_eq!(fetch_one(&b, at(1_300)).await.record.id, first);
    let next = put_at(&b, debounced(4, 1_400), at(1_400)).await;
    assert_ne!(next, first, "a running job no longer takes the key");
    assert_eq!(counts(&b).await.scheduled, 1);

    let racers = (0..8).map(|i| {
        let b = b.clone();
        async move { try_put(&b, vec![debounced(10 + i, 2_000)], at(2_000)).await }
    });
    let ids: BTreeSet<JobId> = race(racers)
        .await
        .into_iter()
        .map(|r| r.expect("enqueue")[0].id)
        .collect();
    assert_eq!(
        ids.into_iter().collect::<Vec<_>>(),
        [next],
        "all fold into the waiting job"
    );
}
