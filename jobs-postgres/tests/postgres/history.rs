//! The error history, rescue and release: errors are stored with their kind and source chain
//! (and errors stored before kinds were kept read back as retryable), a rescued job keeps its
//! place, and a released job keeps or changes its `run_at` as asked.

use std::time::Duration;

use jobs_core::{
    Backend, CountsParams, ErrorKind, ErrorReport, FailParams, Failure, FetchParams, JobId,
    JobRecord, JobStatus, LeasedJob, ReadParams, Release, ReleaseParams, RescueParams,
    RescueTarget,
};
use jobs_postgres::PgBackend;

use crate::support::{at, fresh_backend, new_job, put, t0};

async fn fetch(backend: &PgBackend, now_ms: i64) -> LeasedJob {
    let mut leased = backend
        .fetch(FetchParams {
            ended: Vec::new(),
            known: None,
            queues: vec!["h".into()],
            limit: 1,
            worker: "w".into(),
            lease_for: Duration::from_secs(1),
            now: at(now_ms),
            flow: Vec::new(),
            reserve: 0,
            deliver: 0,
        })
        .await
        .expect("fetch");
    assert_eq!(leased.len(), 1, "a job to fetch at {now_ms} ms");
    leased.remove(0)
}

async fn read(backend: &PgBackend, id: JobId) -> JobRecord {
    backend
        .read(ReadParams { id })
        .await
        .expect("read")
        .expect("stored")
}

#[tokio::test]
async fn failures_store_their_kind_message_and_chain() {
    let backend = fresh_backend().await;
    let ids = put(&backend, vec![new_job("e", "h")], t0()).await;
    let leased = fetch(&backend, 1_000).await;
    let error = ErrorReport {
        kind: ErrorKind::Timeout,
        message: "slow: upstream: \0 reset".into(),
        chain: vec!["upstream".into(), "\0 reset".into()],
    };
    let items = vec![Failure {
        lease: leased.lease(),
        error,
        retry_at: Some(at(5_000)),
    }];
    let accepted = backend
        .fail(FailParams {
            items,
            now: at(2_000),
        })
        .await
        .unwrap();
    assert_eq!(accepted, [true]);
    let record = read(&backend, ids[0]).await;
    assert_eq!(record.status, JobStatus::Pending);
    assert_eq!(record.run_at, at(5_000));
    let stored = &record.errors[0];
    assert_eq!((stored.attempt, stored.at), (1, at(2_000)));
    assert_eq!(stored.kind, ErrorKind::Timeout);
    // PostgreSQL's text holds no NUL: it is stored as U+FFFD.
    assert_eq!(stored.message, "slow: upstream: \u{FFFD} reset");
    assert_eq!(stored.chain, ["upstream", "\u{FFFD} reset"]);
}

#[tokio::test]
async fn errors_stored_without_a_kind_read_back_as_retryable() {
    let backend = fresh_backend().await;
    let ids = put(&backend, vec![new_job("e", "h")], t0()).await;
    // An error as release 0.1 stored it: attempt, message and time only.
    sqlx::query(&format!(
        "UPDATE \"{}\".jobs SET status = 'dead', attempt = 3, finished_at = $2,
             errors = '[{{\"attempt\": 3, \"message\": \"boom\", \"at\": \"2030-01-01T00:00:01+00:00\"}}]'
         WHERE id = $1",
        backend.schema_name()
    ))
    .bind(ids[0].0)
    .bind(at(1_000))
    .execute(backend.pool())
    .await
    .unwrap();
    let record = read(&backend, ids[0]).await;
    let old = &record.errors[0];
    assert_eq!(old.kind, ErrorKind::Retryable);
    assert_eq!(
        (old.attempt, old.message.as_str(), old.at),
        (3, "boom", at(1_000))
    );
    assert!(old.chain.is_empty());
    assert_eq!(
        record.dead_reason(),
        Some(jobs_core::DeadReason::OutOfAttempts)
    );
}

#[tokio::test]
async fn a_rescued_job_keeps_its_place_and_records_the_reports_error() {
    let backend = fresh_backend().await;
    let mut last_chance = new_job("e", "h");
    last_chance.max_attempts = 1;
    last_chance.run_at = at(1);
    let ids = put(&backend, vec![new_job("e", "h"), last_chance], t0()).await;
    fetch(&backend, 1_000).await;
    fetch(&backend, 1_000).await;
    let rescued = backend
        .rescue(RescueParams {
            target: RescueTarget::Lapsed,
            now: at(10_000),
            limit: 10,
            error: ErrorReport::lease_expired(),
        })
        .await
        .unwrap();
    assert_eq!(rescued.len(), 2);
    let retried = read(&backend, ids[0]).await;
    assert_eq!(retried.status, JobStatus::Pending);
    assert_eq!(retried.run_at, t0(), "the rescued job keeps its run_at");
    assert_eq!(retried.lease, None);
    let error = &retried.errors[0];
    let expected = ErrorReport::lease_expired();
    assert_eq!(
        (error.kind, &error.message),
        (expected.kind, &expected.message)
    );
    assert_eq!((error.attempt, error.at), (1, at(10_000)));
    let dead = read(&backend, ids[1]).await;
    assert_eq!(dead.status, JobStatus::Dead);
    assert_eq!(dead.finished_at, Some(at(10_000)));
    assert_eq!(dead.errors[0].kind, ErrorKind::LeaseLost);
}

#[tokio::test]
async fn release_keeps_run_at_unless_given_a_new_one() {
    let backend = fresh_backend().await;
    let ids = put(&backend, vec![new_job("e", "h"), new_job("e", "h")], t0()).await;
    let kept = fetch(&backend, 1_000).await;
    let snoozed = fetch(&backend, 1_000).await;
    let items = vec![
        Release {
            lease: kept.lease(),
            run_at: None,
        },
        Release {
            lease: snoozed.lease(),
            run_at: Some(at(60_000)),
        },
    ];
    let accepted = backend
        .release(ReleaseParams {
            items,
            now: at(2_000),
        })
        .await
        .unwrap();
    assert_eq!(accepted, [true, true]);
    for (id, run_at) in [(ids[0], t0()), (ids[1], at(60_000))] {
        let record = read(&backend, id).await;
        assert_eq!(record.status, JobStatus::Pending);
        assert_eq!(record.attempt, 0, "the attempt is given back");
        assert_eq!(record.run_at, run_at);
        assert!(record.errors.is_empty());
    }
    // Only the kept job is ready before the snooze ends.
    assert_eq!(fetch(&backend, 3_000).await.record.id, ids[0]);
}

#[tokio::test]
async fn a_schema_of_the_first_release_is_upgraded_in_place() {
    let backend = fresh_backend().await;
    let schema = backend.schema_name().to_string();
    // Back to what migration 1 alone made, with a pending and a completed job stored then.
    sqlx::raw_sql(&format!(
        "SET search_path TO \"{schema}\";
         DROP TABLE workers, schedules, queues, liveness, paused_queues, finished_counts,
             queue_flow, flow_starts, flow_started, coalesce_keys, finished_minutes,
             finished_horizons, job_types, flow_places, offers;
         DROP FUNCTION deliver_one;
         DROP FUNCTION finished_counts_clear CASCADE;
         DROP FUNCTION finished_minutes_clear CASCADE;
         DROP FUNCTION fetch_limited(text[], timestamptz, int8, text, timestamptz, text[],
             int4[], int4[], int8[], bool[], bool[], int8, text, int4[], uuid[], uuid[]);
         DROP FUNCTION fetch_limited(text[], timestamptz, int8, text, timestamptz, text[],
             int4[], int4[], int8[], bool[], bool[], int8, text, int4[]);
         DROP FUNCTION fetch_unkeyed(text[], timestamptz, int8, text, timestamptz, text[],
             int4[], int4[], int8[], bool[], text, int4[], uuid[], uuid[]);
         DROP INDEX jobs_waiting;
         ALTER TABLE jobs DROP COLUMN tags, DROP COLUMN key_limits, DROP COLUMN flow_counted,
             DROP COLUMN version, DROP COLUMN step, DROP COLUMN inputs;
         DELETE FROM _jobs_migrations WHERE version > 1;
         RESET search_path;"
    ))
    .execute(backend.pool())
    .await
    .expect("downgrade");
    let old = new_job("e", "h");
    sqlx::query(&format!(
        "INSERT INTO \"{schema}\".jobs (id, name, queue, payload, priority, run_at, status,
             max_attempts, backoff, created_at)
         VALUES ($1, 'e', 'h', '{{}}', 0, $2, 'pending', 3, $3::jsonb, $2)"
    ))
    .bind(old.id.0)
    .bind(t0())
    .bind(serde_json::to_string(&old.backoff).unwrap())
    .execute(backend.pool())
    .await
    .expect("an old row");
    sqlx::query(&format!(
        "INSERT INTO \"{schema}\".jobs (id, name, queue, payload, priority, run_at, status,
             max_attempts, backoff, created_at, finished_at)
         VALUES (gen_random_uuid(), 'e', 'h', '{{}}', 0, $1, 'completed', 3, '{{}}', $1, $1)"
    ))
    .bind(t0())
    .execute(backend.pool())
    .await
    .expect("an old completed row");
    backend.migrate().await.expect("upgrade");
    let record = read(&backend, old.id).await;
    assert!(record.tags.is_empty());
    assert_eq!(record.key_limits, None);
    assert_eq!(
        record.version, 1,
        "a job stored before versions is at version 1"
    );
    assert!(
        record.step.is_none(),
        "a job stored before workflows is no step"
    );
    let versions: Vec<i64> = sqlx::query_scalar(&format!(
        "SELECT version FROM \"{schema}\"._jobs_migrations ORDER BY version"
    ))
    .fetch_all(backend.pool())
    .await
    .unwrap();
    assert_eq!(
        versions,
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21]
    );
    // Migration 5 counted the completed job it found.
    let counts = backend
        .counts(CountsParams { queue: "h".into() })
        .await
        .expect("counts");
    assert_eq!((counts.pending, counts.completed), (1, 1));
}
