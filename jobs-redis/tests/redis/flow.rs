//! Flow control as this backend stores it: the keys of limits, keyed jobs, start logs, throttle
//! and debounce keys; limits seen by another backend on the same prefix; the running count of
//! a key given back, and a reserved lease forgotten, by every way out of running; keyed jobs
//! taken by a fetch that knows no flow; bounded queues refusing batches split over calls or spread over queues, and cron ticks.

use std::time::Duration;

use jobs_core::{
    Action, Backend, Coalesce, CronTickParams, EnqueueParams, Enqueued, Error, ErrorReport,
    FailParams, Failure, FlowParams, JobId, KeyLimits, LeasedJob, ManageParams, NewJob,
    QueueLimits, Rate, Release, ReleaseParams, RescueParams, RescueTarget, SetLimitsParams, Target,
    Timestamp,
};
use jobs_redis::{redis, RedisBackend};

use crate::support::{
    at, fetch, job, keys_like, members_with_scores, raw_connection, redis_url, single_backend, t0,
};

/// A job of `queue` sharing a concurrency of `concurrency` with the other jobs of `key`.
fn keyed(queue: &str, key: &str, concurrency: u32) -> NewJob {
    NewJob {
        key_limits: Some(KeyLimits {
            key: key.into(),
            concurrency: Some(concurrency),
            rate: Some(Rate::new(100, Duration::from_secs(1))),
        }),
        ..job(queue, t0())
    }
}

async fn put(b: &RedisBackend, jobs: Vec<NewJob>, now: Timestamp) -> Result<Vec<Enqueued>, Error> {
    b.enqueue(EnqueueParams { jobs, now }).await
}

async fn set_limits(b: &RedisBackend, queue: &str, limits: QueueLimits) {
    b.set_limits(SetLimitsParams {
        queue: queue.into(),
        limits,
    })
    .await
    .unwrap();
}

/// Fetches from `queue` with the flow the store reports.
async fn fetch_flowing(
    b: &RedisBackend,
    queue: &str,
    limit: usize,
    now: Timestamp,
) -> Vec<LeasedJob> {
    let mut params = fetch(&[queue], limit, now);
    params.flow = b.flow(FlowParams {}).await.unwrap();
    b.fetch(params).await.unwrap()
}

/// What `cmd` answers, on a connection of its own.
async fn answer<T: redis::FromRedisValue>(cmd: &redis::Cmd) -> T {
    cmd.query_async(&mut raw_connection().await).await.unwrap()
}

/// The running count of `key` in `queue` as stored (absent: 0).
async fn key_running(prefix: &str, queue: &str, key: &str) -> Option<i64> {
    answer(
        redis::cmd("HGET")
            .arg(format!("{{{prefix}:{queue}}}:krun"))
            .arg(key),
    )
    .await
}

/// How many reserved leases of `queue` are stored.
async fn reserved(prefix: &str, queue: &str) -> i64 {
    answer(redis::cmd("ZCARD").arg(format!("{{{prefix}:{queue}}}:reserved"))).await
}

/// Every way out of running, in the order the tests take them.
#[derive(Clone, Copy, Debug)]
enum WayOut {
    Complete,
    Retry,
    Dead,
    Release,
    Cancel,
    Delete,
    Rescue,
}

const WAYS_OUT: [WayOut; 7] = [
    WayOut::Complete,
    WayOut::Retry,
    WayOut::Dead,
    WayOut::Release,
    WayOut::Cancel,
    WayOut::Delete,
    WayOut::Rescue,
];

/// Takes `job` out of running `way` at `now` (a rescue a minute later, when its lease has
/// lapsed), and checks that the store did.
async fn take_out(b: &RedisBackend, way: WayOut, job: &LeasedJob, now: Timestamp) {
    let report = ErrorReport::new(jobs_core::ErrorKind::Retryable, "no");
    let lease = job.lease();
    let fail = |retry_at| {
        b.fail(FailParams {
            items: vec![Failure {
                lease,
                error: report.clone(),
                retry_at,
            }],
            now,
        })
    };
    let manage = |action| {
        b.manage(ManageParams {
            action,
            target: Target::Ids(vec![job.record.id]),
            limit: 10,
            now,
        })
    };
    let taken = match way {
        WayOut::Complete => b.complete(jobs_core::CompleteParams {
            items: vec![jobs_core::Completion {
                lease,
                result: serde_json::value::RawValue::from_string("null".into()).unwrap(),
            }],
            now,
        }),
        WayOut::Retry => fail(Some(at(1_000_000))),
        WayOut::Dead => fail(None),
        WayOut::Release => b.release(ReleaseParams {
            items: vec![Release {
                lease,
                run_at: Some(at(1_000_000)),
            }],
            now,
        }),
        WayOut::Cancel | WayOut::Delete => {
            let action = match way {
                WayOut::Cancel => Action::Cancel,
                _ => Action::Delete,
            };
            let changed = manage(action).await.unwrap().changed;
            assert_eq!(changed, [job.record.id], "{way:?}");
            return;
        }
        WayOut::Rescue => {
            let rescued = b.rescue(RescueParams {
                target: RescueTarget::Lapsed,
                now: now + chrono::Duration::seconds(60),
                limit: 10,
                error: report.clone(),
            });
            assert!(rescued.await.unwrap().contains(&job.record.id), "{way:?}");
            return;
        }
    };
    assert_eq!(taken.await.unwrap(), [true], "{way:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_keys_live_in_the_queues_slot_and_the_prefixs() {
    let b = single_backend().await;
    let p = b.key_prefix().to_string();
    set_limits(
        &b,
        "fq",
        QueueLimits::default()
            .rate(Rate::new(10, Duration::from_secs(1)))
            .max_depth(50),
    )
    .await;
    let throttled = NewJob {
        coalesce: Some(Coalesce::Throttle {
            key: "t1".into(),
            window: Duration::from_secs(5),
        }),
        ..job("fq", t0())
    };
    let debounced = NewJob {
        coalesce: Some(Coalesce::Debounce {
            key: "d1".into(),
            window: Duration::from_secs(5),
        }),
        ..job("fq", at(5_000))
    };
    let jobs = vec![keyed("fq", "k1", 1), job("fq", t0()), throttled, debounced];
    let keyed_id = jobs[0].id;
    put(&b, jobs, t0()).await.unwrap();

    let mut conn = raw_connection().await;
    let zrange = |key: String| redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).clone();
    let kready: Vec<String> = zrange(format!("{{{p}:fq}}:kready"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(kready.len(), 1, "the keyed job waits apart");
    assert!(kready[0].ends_with(&keyed_id.0.simple().to_string()));
    let ready: Vec<String> = zrange(format!("{{{p}:fq}}:ready"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(ready.len(), 2, "the plain and the throttled job");

    let leased = fetch_flowing(&b, "fq", 10, t0()).await;
    assert_eq!(leased.len(), 3);
    assert_eq!(key_running(&p, "fq", "k1").await, Some(1));
    let queue_keys = keys_like(&mut conn, &p, ":fq}:[a-z]*").await;
    let names: Vec<&str> = queue_keys
        .iter()
        .map(|k| k.rsplit_once("}:").unwrap().1)
        .filter(|k| !k.contains(':') || k.starts_with("kstarts:") || k.starts_with("th:"))
        .collect();
    for expected in [
        "all",
        "counts",
        "debounce",
        "delayed",
        "krun",
        "kstarts:k1",
        "limits",
        "running",
        "starts",
        "th:t1",
    ] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let md: String = redis::cmd("HGET")
        .arg(format!("{{{p}:fq}}:limits"))
        .arg("md")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(md, "50");
    let listed: Vec<String> = keys_like(&mut conn, &p, "}:*").await;
    assert!(listed.contains(&format!("{{{p}}}:limits")), "{listed:?}");
    assert!(listed.contains(&format!("{{{p}}}:keyed")), "{listed:?}");
    let starts: Vec<(String, String)> =
        members_with_scores(&mut conn, &format!("{{{p}:fq}}:starts")).await;
    assert_eq!(
        starts.len(),
        2,
        "one entry per fetch batch, and the total: {starts:?}"
    );
    assert!(starts[0].0.ends_with(":3"), "{starts:?}");
    assert_eq!(starts[0].1, t0().timestamp_micros().to_string());
    assert_eq!(starts[1], ("total:3".to_string(), "inf".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_backend_on_the_prefix_sees_the_limits() {
    let b = single_backend().await;
    let url = format!("{}?prefix={}", redis_url(), b.key_prefix());
    let other = RedisBackend::connect(&url).await.unwrap();
    let limits = QueueLimits::default().concurrency(2).max_depth(1);
    set_limits(&b, "shared", limits).await;
    put(&b, vec![keyed("keyed-shared", "k", 1)], t0())
        .await
        .unwrap();
    let flow = other.flow(FlowParams {}).await.unwrap();
    let listed: Vec<(&str, QueueLimits, bool)> = flow
        .iter()
        .map(|f| (f.queue.as_str(), f.limits, f.keyed))
        .collect();
    assert_eq!(
        listed,
        [
            ("keyed-shared", QueueLimits::default(), true),
            ("shared", limits, false)
        ]
    );
    put(&other, vec![job("shared", t0())], t0()).await.unwrap();
    let refused = put(&b, vec![job("shared", t0())], t0()).await;
    assert!(
        matches!(refused, Err(Error::QueueFull { ref queue, max_depth: 1 }) if queue == "shared"),
        "{refused:?}"
    );
    set_limits(&other, "shared", QueueLimits::default()).await;
    assert_eq!(b.flow(FlowParams {}).await.unwrap().len(), 1, "unlisted");
    put(&b, vec![job("shared", t0())], t0()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_way_out_of_running_gives_the_key_back() {
    let b = single_backend().await;
    let p = b.key_prefix().to_string();
    let jobs: Vec<NewJob> = (0..7).map(|_| keyed("out", "k", 1)).collect();
    put(&b, jobs, t0()).await.unwrap();
    for (n, way) in WAYS_OUT.into_iter().enumerate() {
        let now = at(10 * (n as i64 + 1));
        let leased = fetch_flowing(&b, "out", 10, now).await;
        assert_eq!(leased.len(), 1, "one at a time");
        assert_eq!(key_running(&p, "out", "k").await, Some(1));
        take_out(&b, way, &leased[0], now).await;
        assert_eq!(key_running(&p, "out", "k").await, None, "{way:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_that_knows_no_flow_takes_keyed_jobs_within_their_limits() {
    let b = single_backend().await;
    let jobs = vec![
        keyed("unlisted", "k", 1),
        keyed("unlisted", "k", 1),
        job("unlisted", t0()),
    ];
    let ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
    put(&b, jobs, t0()).await.unwrap();
    let leased = b.fetch(fetch(&["unlisted"], 10, t0())).await.unwrap();
    let mut got: Vec<JobId> = leased.iter().map(|j| j.record.id).collect();
    got.sort();
    let mut expected = vec![ids[0], ids[2]];
    expected.sort();
    assert_eq!(got, expected, "the plain job and one of key k");
    let across = b.fetch(fetch(&["unlisted", "elsewhere"], 10, t0())).await;
    assert_eq!(across.unwrap().len(), 0, "key k is at its concurrency");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounded_queues_refuse_split_and_spread_batches_whole() {
    let b = single_backend().await;
    set_limits(&b, "deep", QueueLimits::default().max_depth(600)).await;
    let big: Vec<NewJob> = (0..601).map(|_| job("deep", t0())).collect();
    let refused = put(&b, big, t0()).await;
    assert!(
        matches!(refused, Err(Error::QueueFull { max_depth: 600, .. })),
        "{refused:?}"
    );
    let counts = |q: &'static str| {
        let b = b.clone();
        async move {
            let c = b
                .counts(jobs_core::CountsParams { queue: q.into() })
                .await
                .unwrap();
            c.pending + c.scheduled
        }
    };
    assert_eq!(counts("deep").await, 0, "no chunk of the batch stored");
    let fits: Vec<NewJob> = (0..600).map(|_| job("deep", t0())).collect();
    assert_eq!(put(&b, fits, t0()).await.unwrap().len(), 600);
    assert_eq!(counts("deep").await, 600);

    set_limits(&b, "small", QueueLimits::default().max_depth(1)).await;
    let spread = vec![job("wide", t0()), job("small", t0()), job("small", t0())];
    let refused = put(&b, spread, t0()).await;
    assert!(
        matches!(refused, Err(Error::QueueFull { ref queue, max_depth: 1 }) if queue == "small"),
        "{refused:?}"
    );
    assert_eq!(
        counts("wide").await,
        0,
        "the unbounded queue's job not stored either"
    );
    let spread = vec![job("wide", t0()), job("small", t0())];
    assert_eq!(put(&b, spread, t0()).await.unwrap().len(), 2);
    assert_eq!((counts("wide").await, counts("small").await), (1, 1));

    let tick = |tick: Timestamp| CronTickParams {
        schedule: "nightly".into(),
        tick,
        job: job("small", tick),
        now: tick,
    };
    let refused = b.enqueue_cron(tick(at(1_000))).await;
    assert!(
        matches!(refused, Err(Error::QueueFull { .. })),
        "{refused:?}"
    );
    set_limits(&b, "small", QueueLimits::default().max_depth(2)).await;
    assert!(
        b.enqueue_cron(tick(at(1_000))).await.unwrap().is_some(),
        "the refused tick was not recorded"
    );
}

/// A reserved lease is stored apart from the queue's running count while its job runs (once
/// promoted, its worker's place counts instead), keeps its place when renewed, and is
/// forgotten by every way out of running, so that no concurrency is left counting less than
/// what runs; one whose expiry passed unrenewed counts again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_way_out_of_running_forgets_a_reserved_lease() {
    let b = single_backend().await;
    let p = b.key_prefix().to_string();
    set_limits(&b, "res", QueueLimits::default().concurrency(1)).await;
    put(&b, (0..10).map(|_| job("res", t0())).collect(), t0())
        .await
        .unwrap();
    let reserving = |now: Timestamp| {
        let b = b.clone();
        async move {
            let mut params = fetch(&["res"], 2, now);
            params.flow = b.flow(FlowParams {}).await.unwrap();
            params.reserve = 1;
            b.fetch(params).await.unwrap()
        }
    };
    let first = reserving(at(10)).await;
    let kinds: Vec<bool> = first.iter().map(|j| j.reserved).collect();
    assert_eq!(kinds, [false, true], "one within the limit, one reserved");
    assert_eq!(reserved(&p, "res").await, 1);
    let renewed = b.renew(jobs_core::RenewParams {
        items: vec![first[1].lease()],
        now: at(20),
        expires_at: at(90_000),
    });
    assert_eq!(renewed.await.unwrap(), [true]);
    assert_eq!(reserved(&p, "res").await, 1, "renewed, still reserved");
    let places = |places| {
        b.hold_places(jobs_core::PlacesParams {
            worker: "reserving".into(),
            queue: "res".into(),
            places,
        })
    };
    places(1).await.unwrap();
    assert_eq!(
        reserved(&p, "res").await,
        1,
        "promoted: counted as its worker's place, and kept out of the running count"
    );

    let mut now = at(100);
    for way in WAYS_OUT {
        now += chrono::Duration::milliseconds(10);
        let leased = reserving(now).await;
        let kinds: Vec<bool> = leased.iter().map(|j| j.reserved).collect();
        assert_eq!(kinds, [true], "the limit is full: reserved only");
        assert_eq!(reserved(&p, "res").await, 2);
        take_out(&b, way, &leased[0], now).await;
        assert_eq!(reserved(&p, "res").await, 1, "{way:?}");
    }

    // A reserved lease whose expiry passed unrenewed (not rescued yet) counts again.
    take_out(&b, WayOut::Complete, &first[1], now).await;
    places(0).await.unwrap();
    assert_eq!(reserved(&p, "res").await, 0);
    let pair = reserving(now).await;
    let kinds: Vec<bool> = pair.iter().map(|j| j.reserved).collect();
    assert_eq!(kinds, [false, true]);
    take_out(&b, WayOut::Complete, &pair[0], now).await;
    assert_eq!(
        fetch_flowing(&b, "res", 1, now).await.len(),
        1,
        "the reserved job alone runs: it counts for nothing"
    );
    let later = now + chrono::Duration::seconds(60);
    assert_eq!(
        fetch_flowing(&b, "res", 1, later).await.len(),
        0,
        "its lease's expiry passed: it counts, with the one just leased"
    );
    assert_eq!(reserved(&p, "res").await, 0);
}
