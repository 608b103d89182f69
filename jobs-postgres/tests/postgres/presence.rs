//! Worker heartbeats and recorded cron schedules.

use jobs_core::{
    Backend, CronTickParams, DeregisterParams, HeartbeatParams, SaveSchedulesParams, ScheduleInfo,
    SchedulesParams, StoredSchedule, WorkerInfo, WorkersParams,
};
use jobs_postgres::PgBackend;

use crate::support::{at, fresh_backend, new_job, t0};

fn worker(id: &str) -> WorkerInfo {
    WorkerInfo {
        id: id.into(),
        host: "box-1".into(),
        pid: 4242,
        queues: vec!["email".into(), "pdf".into()],
        concurrency: 16,
        names: vec!["send_welcome_email".into()],
        started_at: t0(),
        last_seen: t0(),
    }
}

async fn beat(backend: &PgBackend, id: &str, now_ms: i64, expires_ms: i64) {
    backend
        .heartbeat(HeartbeatParams {
            worker: worker(id),
            expires_at: at(expires_ms),
            now: at(now_ms),
        })
        .await
        .expect("heartbeat");
}

async fn live(backend: &PgBackend, now_ms: i64) -> Vec<WorkerInfo> {
    backend
        .live_workers(WorkersParams { now: at(now_ms) })
        .await
        .expect("live workers")
}

#[tokio::test]
async fn heartbeats_list_live_workers_until_they_expire_or_deregister() {
    let backend = fresh_backend().await;
    beat(&backend, "w2", 0, 5_000).await;
    beat(&backend, "w1", 1_000, 10_000).await;
    let mut expected = worker("w1");
    expected.last_seen = at(1_000);
    let listed = live(&backend, 2_000).await;
    assert_eq!(
        listed.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
        ["w1", "w2"]
    );
    assert_eq!(listed[0], expected);
    assert_eq!(listed[1].last_seen, at(0));
    assert_eq!(
        live(&backend, 5_000).await.len(),
        2,
        "expires_at is inclusive"
    );
    assert_eq!(live(&backend, 6_000).await.len(), 1);
    // A later beat brings a worker back, with its new last_seen.
    beat(&backend, "w2", 7_000, 20_000).await;
    let listed = live(&backend, 8_000).await;
    assert_eq!(listed[1].last_seen, at(7_000));
    backend
        .deregister(DeregisterParams {
            worker: "w1".into(),
        })
        .await
        .unwrap();
    assert_eq!(live(&backend, 8_000).await.len(), 1);
    // A heartbeat forgets the workers that expired.
    beat(&backend, "w3", 30_000, 40_000).await;
    let rows: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM \"{}\".workers",
        backend.schema_name()
    ))
    .fetch_one(backend.pool())
    .await
    .unwrap();
    assert_eq!(rows, 1);
}

fn schedule(name: &str, expression: &str) -> ScheduleInfo {
    ScheduleInfo {
        name: name.into(),
        queue: "cron".into(),
        expression: expression.into(),
        timezone: "Europe/Paris".into(),
    }
}

async fn save(backend: &PgBackend, schedules: Vec<ScheduleInfo>, now_ms: i64) {
    backend
        .save_schedules(SaveSchedulesParams {
            schedules,
            now: at(now_ms),
        })
        .await
        .expect("save schedules");
}

async fn stored(backend: &PgBackend) -> Vec<StoredSchedule> {
    backend
        .stored_schedules(SchedulesParams {})
        .await
        .expect("stored schedules")
}

#[tokio::test]
async fn schedules_are_recorded_by_name_with_their_last_tick() {
    let backend = fresh_backend().await;
    save(
        &backend,
        vec![
            schedule("report", "0 * * * *"),
            schedule("digest", "0 8 * * *"),
        ],
        0,
    )
    .await;
    let first = stored(&backend).await;
    assert_eq!(
        first,
        [
            StoredSchedule {
                schedule: schedule("digest", "0 8 * * *"),
                last_tick: None,
                seen_at: at(0),
            },
            StoredSchedule {
                schedule: schedule("report", "0 * * * *"),
                last_tick: None,
                seen_at: at(0),
            },
        ]
    );
    let mut job = new_job("report", "cron");
    job.run_at = at(3_600_000);
    let ticked = backend
        .enqueue_cron(CronTickParams {
            schedule: "report".into(),
            tick: at(3_600_000),
            job,
            now: at(3_600_000),
        })
        .await
        .unwrap();
    assert!(ticked.is_some());
    // A later save replaces by name; of two of one name in a save, the later is kept.
    save(
        &backend,
        vec![
            schedule("report", "*/5 * * * *"),
            schedule("report", "*/10 * * * *"),
        ],
        5_000,
    )
    .await;
    let now = stored(&backend).await;
    assert_eq!(now[0].seen_at, at(0));
    assert_eq!(now[1].schedule, schedule("report", "*/10 * * * *"));
    assert_eq!(now[1].last_tick, Some(at(3_600_000)));
    assert_eq!(now[1].seen_at, at(5_000));
}
