//! What the store knows besides jobs: its queues, the cron schedules workers recorded, and the
//! live workers.

use super::*;

fn schedule(name: &str, expression: &str, timezone: &str) -> ScheduleInfo {
    ScheduleInfo {
        name: name.into(),
        queue: QUEUE.into(),
        expression: expression.into(),
        timezone: timezone.into(),
    }
}

/// A worker's description, as its heartbeats record it.
pub(super) fn worker_info(id: &str, started_at: Timestamp) -> WorkerInfo {
    WorkerInfo {
        id: id.into(),
        host: "conformance-host".into(),
        pid: 4242,
        queues: vec![QUEUE.into(), OTHER_QUEUE.into()],
        concurrency: 8,
        names: vec!["conformance.a".into(), "conformance.b".into()],
        started_at,
        // Not stored: the heartbeat's `now` is.
        last_seen: at(-1_000_000),
    }
}

/// Records `worker`'s heartbeat at `now`, lasting until `expires_at`.
pub(super) async fn beat(
    b: &AnyBackend,
    worker: WorkerInfo,
    now: Timestamp,
    expires_at: Timestamp,
) {
    let params = HeartbeatParams {
        worker,
        expires_at,
        now,
    };
    b.heartbeat(params).await.expect("heartbeat");
}

async fn live(b: &AnyBackend, now: Timestamp) -> Vec<WorkerInfo> {
    b.live_workers(WorkersParams { now })
        .await
        .expect("live workers")
}

/// `Operations::queues` names every queue with jobs, sorted, each with its counts by status.
pub async fn queues_list_every_queue_with_its_counts(b: AnyBackend) {
    assert!(b.queues().await.unwrap().is_empty(), "a fresh store");
    let in_queue = |queue: &str| {
        let mut job = new_job("queued");
        job.queue = queue.to_string();
        job
    };
    for status in [JobStatus::Pending, JobStatus::Running, JobStatus::Dead] {
        job_in(&b, in_queue(QUEUE), status, t0()).await;
    }
    put(&b, in_queue(QUEUE)).await;
    job_in(&b, in_queue(OTHER_QUEUE), JobStatus::Scheduled, t0()).await;
    job_in(&b, in_queue("conformance-a"), JobStatus::Completed, t0()).await;

    let summaries = b.queues().await.unwrap();
    let names: Vec<&str> = summaries.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["conformance", "conformance-a", "conformance-other"]);
    let counts: Vec<QueueCounts> = summaries.iter().map(|q| q.counts).collect();
    assert_eq!(
        counts,
        [
            QueueCounts {
                pending: 2,
                running: 1,
                dead: 1,
                ..QueueCounts::default()
            },
            QueueCounts {
                completed: 1,
                ..QueueCounts::default()
            },
            QueueCounts {
                scheduled: 1,
                ..QueueCounts::default()
            },
        ]
    );
    let names = b.queue_names(QueueNamesParams {}).await.unwrap();
    assert_eq!(names, ["conformance", "conformance-a", "conformance-other"]);
}

/// Saved schedules read back by name, each replaced whole by a later save of its name, with
/// when it was saved and the last tick the store holds for it.
pub async fn schedules_saved_by_name_with_their_last_tick(b: AnyBackend) {
    let stored = || async { b.stored_schedules(SchedulesParams {}).await.unwrap() };
    assert!(stored().await.is_empty());
    let nightly = schedule("conformance.nightly", "0 0 3 * * *", "Europe/Paris");
    let hourly = schedule("conformance.hourly", "0 0 * * * *", "UTC");
    let save = |schedules: Vec<ScheduleInfo>, now| {
        b.save_schedules(SaveSchedulesParams { schedules, now })
    };
    save(vec![nightly.clone(), hourly.clone()], t0())
        .await
        .unwrap();
    assert_eq!(
        stored().await,
        vec![
            StoredSchedule {
                schedule: hourly.clone(),
                last_tick: None,
                seen_at: t0()
            },
            StoredSchedule {
                schedule: nightly.clone(),
                last_tick: None,
                seen_at: t0()
            },
        ]
    );

    let moved = ScheduleInfo {
        expression: "0 30 4 * * *".into(),
        timezone: "Asia/Tokyo".into(),
        ..nightly.clone()
    };
    save(vec![moved.clone()], at(1_000)).await.unwrap();
    let mut job = new_job(&hourly.name);
    job.run_at = at(3_600_000);
    let tick = CronTickParams {
        schedule: hourly.name.clone(),
        tick: at(3_600_000),
        job,
        now: at(3_600_000),
    };
    assert!(b.enqueue_cron(tick).await.unwrap().is_some());
    assert_eq!(
        stored().await,
        vec![
            StoredSchedule {
                schedule: hourly,
                last_tick: Some(at(3_600_000)),
                seen_at: t0()
            },
            StoredSchedule {
                schedule: moved,
                last_tick: None,
                seen_at: at(1_000)
            },
        ]
    );
}

/// `Operations::schedules` shows each recorded schedule with its next ticks from now, in its
/// time zone; a schedule that no longer parses shows none.
pub async fn schedules_show_their_next_ticks(b: AnyBackend) {
    let quarterly = schedule("conformance.quarter", "0 */15 * * * *", "UTC");
    let paris = schedule("conformance.paris", "0 0 9 * * *", "Europe/Paris");
    let broken = schedule("conformance.broken", "not a cron line", "UTC");
    let params = SaveSchedulesParams {
        schedules: vec![quarterly.clone(), paris.clone(), broken.clone()],
        now: t0(),
    };
    b.save_schedules(params).await.unwrap();
    let before = real_now();
    let shown = b.schedules().await.unwrap();
    let names: Vec<&str> = shown.iter().map(|s| s.schedule.name.as_str()).collect();
    assert_eq!(names, [&broken.name, &paris.name, &quarterly.name]);
    assert!(shown[0].next.is_empty(), "{:?}", shown[0]);

    let ticks = &shown[2].next;
    assert_eq!(ticks.len(), 3, "{ticks:?}");
    let after_by = ticks[0] - before;
    assert!(
        after_by > chrono::Duration::zero()
            && after_by <= chrono::Duration::minutes(15) + chrono::Duration::seconds(5),
        "the first tick is within 15 minutes: {ticks:?}"
    );
    for pair in ticks.windows(2) {
        assert_eq!(pair[1] - pair[0], chrono::Duration::minutes(15));
    }
    let paris_tz: chrono_tz::Tz = "Europe/Paris".parse().unwrap();
    for tick in &shown[1].next {
        let local = tick.with_timezone(&paris_tz);
        assert_eq!(local.format("%H:%M:%S").to_string(), "09:00:00");
    }
    assert_eq!(shown[1].next.len(), 3);
    assert_eq!(
        (
            shown[2].schedule.clone(),
            shown[2].last_tick,
            shown[2].seen_at
        ),
        (quarterly, None, t0())
    );
}

/// A heartbeat records a worker as it describes itself, with `now` as its last sighting; a later
/// one replaces it. Live workers are listed by id.
pub async fn workers_heartbeat_records_live_workers(b: AnyBackend) {
    assert!(live(&b, t0()).await.is_empty());
    beat(&b, worker_info("w-2", at(-10)), t0(), at(3_000)).await;
    beat(&b, worker_info("w-1", at(-20)), at(10), at(3_010)).await;
    let seen = live(&b, at(20)).await;
    let expected = |id: &str, started_at, last_seen| WorkerInfo {
        last_seen,
        ..worker_info(id, started_at)
    };
    assert_eq!(
        seen,
        vec![
            expected("w-1", at(-20), at(10)),
            expected("w-2", at(-10), t0())
        ]
    );

    let mut busier = worker_info("w-2", at(-10));
    busier.concurrency = 16;
    busier.queues = vec![QUEUE.into()];
    beat(&b, busier.clone(), at(1_000), at(4_000)).await;
    let seen = live(&b, at(1_001)).await;
    assert_eq!(
        seen[1],
        WorkerInfo {
            last_seen: at(1_000),
            ..busier
        }
    );
    assert_eq!(seen.len(), 2);
}

/// A worker whose heartbeat expired is not listed (one expiring right now still is), until it
/// beats again.
pub async fn workers_expire_without_heartbeats(b: AnyBackend) {
    beat(&b, worker_info("w-1", t0()), t0(), at(3_000)).await;
    beat(&b, worker_info("w-2", t0()), t0(), at(9_000)).await;
    let ids = |workers: Vec<WorkerInfo>| workers.into_iter().map(|w| w.id).collect::<Vec<_>>();
    assert_eq!(ids(live(&b, at(3_000)).await), ["w-1", "w-2"]);
    assert_eq!(ids(live(&b, at(3_001)).await), ["w-2"], "w-1 expired");
    assert!(live(&b, at(9_001)).await.is_empty());
    beat(&b, worker_info("w-1", t0()), at(10_000), at(13_000)).await;
    assert_eq!(
        ids(live(&b, at(10_000)).await),
        ["w-1"],
        "back after a beat"
    );
}

/// A deregistered worker is forgotten at once; forgetting an unknown one is no error.
pub async fn workers_deregister_forgets_a_worker(b: AnyBackend) {
    beat(&b, worker_info("w-1", t0()), t0(), at(60_000)).await;
    beat(&b, worker_info("w-2", t0()), t0(), at(60_000)).await;
    let forget = |worker: &str| {
        b.deregister(DeregisterParams {
            worker: worker.into(),
        })
    };
    forget("w-1").await.unwrap();
    let seen = live(&b, at(1)).await;
    assert_eq!(
        seen.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
        ["w-2"]
    );
    forget("w-1").await.unwrap();
    forget("w-unknown").await.unwrap();
    assert_eq!(live(&b, at(1)).await.len(), 1);
}

/// `Operations::workers` lists the live workers, each with the running jobs it holds leases on.
pub async fn workers_show_the_jobs_they_run(b: AnyBackend) {
    let now = real_now();
    let soon = now + chrono::Duration::seconds(60);
    for id in ["w-busy", "w-idle", "w-other"] {
        beat(&b, worker_info(id, now), now, soon).await;
    }
    beat(
        &b,
        worker_info("w-gone", now),
        now,
        now - chrono::Duration::seconds(1),
    )
    .await;
    put_many(&b, (0..5).map(|_| new_job("held")), t0()).await;
    let lease_to = |worker: &str, limit| {
        let mut params = fetch_params(&[QUEUE], limit, t0());
        params.worker = worker.into();
        b.fetch(params)
    };
    let busy: Vec<JobId> = lease_to("w-busy", 2)
        .await
        .unwrap()
        .iter()
        .map(|j| j.record.id)
        .collect();
    let other = lease_to("w-other", 2).await.unwrap();
    let gone = lease_to("w-gone", 1).await.unwrap();
    assert_eq!(gone.len(), 1);
    assert!(
        complete(&b, &other[1], "null", at(1)).await,
        "finished jobs are not running"
    );

    let shown = b.workers().await.unwrap();
    let running: Vec<(&str, &[JobId])> = shown
        .iter()
        .map(|s| (s.worker.id.as_str(), s.running.as_slice()))
        .collect();
    assert_eq!(
        running,
        [
            ("w-busy", busy.as_slice()),
            ("w-idle", &[][..]),
            ("w-other", &[other[0].record.id][..]),
        ]
    );
    assert_eq!(shown[0].worker.last_seen, now);
    assert_eq!(shown[0].worker.host, "conformance-host");
}
