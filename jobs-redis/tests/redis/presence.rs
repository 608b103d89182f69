//! Workers and schedules in keys of the prefix (hash tag `{prefix}`): `{prefix}:workers` by
//! expiry beside `{prefix}:worker-info`, dead workers dropped by the next heartbeat, and
//! `{prefix}:schedules` with the last ticks read from each queue's `cron` hash.

use jobs_core::{
    Backend, CronTickParams, DeregisterParams, HeartbeatParams, SaveSchedulesParams, ScheduleInfo,
    SchedulesParams, Timestamp, WorkerInfo, WorkersParams,
};
use jobs_redis::redis;

use crate::support::{job, keys_like, raw_connection, single_backend, t0};

fn at(s: i64) -> Timestamp {
    t0() + chrono::Duration::seconds(s)
}

fn worker(id: &str) -> WorkerInfo {
    WorkerInfo {
        id: id.into(),
        host: "host-1".into(),
        pid: 42,
        queues: vec!["email".into()],
        concurrency: 4,
        names: vec!["send".into()],
        started_at: t0(),
        last_seen: t0(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_live_in_keys_of_the_prefix_and_expire() {
    let b = single_backend().await;
    let mut conn = raw_connection().await;
    let prefix = b.key_prefix().to_string();
    let beat = |id: &str, expires: i64, now: i64| HeartbeatParams {
        worker: worker(id),
        expires_at: at(expires),
        now: at(now),
    };
    b.heartbeat(beat("a", 10, 0)).await.unwrap();
    b.heartbeat(beat("b", 1, 0)).await.unwrap();
    assert_eq!(
        keys_like(&mut conn, &prefix, "}:*").await,
        [
            format!("{{{prefix}}}:layout"),
            format!("{{{prefix}}}:worker-info"),
            format!("{{{prefix}}}:workers")
        ]
    );
    let members = |conn: &mut redis::aio::MultiplexedConnection| {
        let mut conn = conn.clone();
        let prefix = prefix.clone();
        async move {
            let ids: Vec<String> = redis::cmd("ZRANGE")
                .arg(format!("{{{prefix}}}:workers"))
                .arg(0)
                .arg(-1)
                .query_async(&mut conn)
                .await
                .unwrap();
            let info: Vec<String> = redis::cmd("HKEYS")
                .arg(format!("{{{prefix}}}:worker-info"))
                .query_async(&mut conn)
                .await
                .unwrap();
            (ids, info)
        }
    };
    let (ids, mut info) = members(&mut conn).await;
    info.sort();
    assert_eq!(
        (ids, info),
        (vec!["b".into(), "a".into()], vec!["a".into(), "b".into()])
    );
    let live = b.live_workers(WorkersParams { now: at(1) }).await.unwrap();
    assert_eq!(
        live.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );

    // b's heartbeat expired: a's next heartbeat drops it from both keys.
    b.heartbeat(beat("a", 15, 5)).await.unwrap();
    assert_eq!(
        members(&mut conn).await,
        (vec!["a".into()], vec!["a".into()])
    );
    let live = b.live_workers(WorkersParams { now: at(5) }).await.unwrap();
    assert_eq!(
        live,
        [WorkerInfo {
            last_seen: at(5),
            ..worker("a")
        }]
    );

    b.deregister(DeregisterParams { worker: "a".into() })
        .await
        .unwrap();
    assert_eq!(
        keys_like(&mut conn, &prefix, "}:*").await,
        [format!("{{{prefix}}}:layout")],
        "the workers' keys are gone; the store's layout stays"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_live_in_a_key_of_the_prefix_with_ticks_in_their_queue() {
    let b = single_backend().await;
    let mut conn = raw_connection().await;
    let prefix = b.key_prefix().to_string();
    let schedule = ScheduleInfo {
        name: "nightly".into(),
        queue: "reports".into(),
        expression: "0 0 3 * * *".into(),
        timezone: "Europe/Paris".into(),
    };
    let save = |now| SaveSchedulesParams {
        schedules: vec![schedule.clone()],
        now,
    };
    b.save_schedules(save(t0())).await.unwrap();
    let tick = at(60);
    let stored = b
        .enqueue_cron(CronTickParams {
            schedule: "nightly".into(),
            tick,
            job: job("reports", tick),
            now: tick,
        })
        .await
        .unwrap();
    assert!(stored.is_some());
    b.save_schedules(save(at(61))).await.unwrap();
    let fields: Vec<String> = redis::cmd("HKEYS")
        .arg(format!("{{{prefix}}}:schedules"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(fields, ["nightly"]);
    let ticked: Option<i64> = redis::cmd("HGET")
        .arg(format!("{{{prefix}:reports}}:cron"))
        .arg("nightly")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(ticked, Some(tick.timestamp_micros()));
    let listed = b.stored_schedules(SchedulesParams {}).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].schedule, schedule);
    assert_eq!(
        (listed[0].last_tick, listed[0].seen_at),
        (Some(tick), at(61))
    );
}
