//! Payload versions as PostgreSQL keeps them: every enqueue path stores a job's version, the
//! limited fetch takes only the versions a worker knows, a debounced enqueue folds its version
//! with its payload, and migration 0008 adds the column without rewriting `jobs` and leaves one
//! `fetch_limited` function behind; the release before 0010 still fetches within limits.

use std::time::Duration;

use jobs_core::{
    Backend, Coalesce, CronTickParams, FetchParams, FlowParams, JobId, JobStatus, KeyLimits,
    KnownJob, LeasedJob, NewJob, QueueLimits, ReadParams, SetLimitsParams,
};
use jobs_postgres::PgBackend;

use crate::support::{at, fresh_backend, new_job, put, t0};

/// A job of `name` in `queue` at payload `version`.
fn at_version(name: &str, queue: &str, version: u32) -> NewJob {
    let mut job = new_job(name, queue);
    job.version = version;
    job
}

/// `name` known up to `version`.
fn known(name: &str, version: u32) -> KnownJob {
    KnownJob {
        name: name.to_string(),
        version,
    }
}

async fn read(backend: &PgBackend, id: JobId) -> jobs_core::JobRecord {
    backend
        .read(ReadParams { id })
        .await
        .expect("read")
        .expect("stored")
}

/// Leases up to 10 jobs of `queues` at t0 knowing `known`, with the flow the store reports.
async fn fetch_known(backend: &PgBackend, queues: &[&str], known: Vec<KnownJob>) -> Vec<LeasedJob> {
    backend
        .fetch(FetchParams {
            ended: Vec::new(),
            known: Some(known),
            queues: queues.iter().map(|q| q.to_string()).collect(),
            limit: 10,
            worker: "w".into(),
            lease_for: Duration::from_secs(60),
            now: t0(),
            flow: backend.flow(FlowParams {}).await.expect("flow"),
            reserve: 0,
            deliver: 0,
        })
        .await
        .expect("fetch")
}

async fn scalar(backend: &PgBackend, query: &str) -> i64 {
    let query = query.replace("{schema}", &format!("\"{}\"", backend.schema_name()));
    sqlx::query_scalar(&query)
        .fetch_one(backend.pool())
        .await
        .expect("query")
}

#[tokio::test]
async fn every_enqueue_path_stores_the_version() {
    let backend = fresh_backend().await;
    backend
        .set_limits(SetLimitsParams {
            queue: "bounded".into(),
            limits: QueueLimits {
                max_depth: Some(10),
                ..QueueLimits::default()
            },
        })
        .await
        .expect("set limits");
    let mut unique = at_version("a", "q", 4);
    unique.unique_key = Some("u".into());
    let mut other_unique = at_version("a", "q", 5);
    other_unique.unique_key = Some("v".into());
    let mut keyed = at_version("a", "q", 6);
    keyed.key_limits = Some(KeyLimits {
        key: "k".into(),
        concurrency: Some(1),
        rate: None,
    });
    let mut debounced = at_version("a", "q", 7);
    debounced.coalesce = Some(Coalesce::Debounce {
        key: "d".into(),
        window: Duration::from_secs(1),
    });
    let mut stored = Vec::new();
    // One job (enqueue_one.sql), a batch (enqueue_many.sql), a batch with unique keys
    // (enqueue.sql), jobs with key limits, a debounce key or a bounded queue (guarded).
    stored.extend(put(&backend, vec![at_version("a", "q", 2)], t0()).await);
    let batch = vec![at_version("a", "q", 3), at_version("a", "q", 9)];
    stored.extend(put(&backend, batch, t0()).await);
    stored.extend(put(&backend, vec![unique, other_unique], t0()).await);
    stored.extend(put(&backend, vec![keyed], t0()).await);
    stored.extend(put(&backend, vec![debounced], t0()).await);
    stored.extend(put(&backend, vec![at_version("a", "bounded", 8)], t0()).await);
    let cron = backend
        .enqueue_cron(CronTickParams {
            schedule: "tick".into(),
            tick: t0(),
            job: at_version("tick", "q", 11),
            now: t0(),
        })
        .await
        .expect("cron tick")
        .expect("the tick is new");
    stored.push(cron);
    let mut versions = Vec::new();
    for id in stored {
        versions.push(read(&backend, id).await.version);
    }
    assert_eq!(versions, [2, 3, 9, 4, 5, 6, 7, 8, 11]);
}

#[tokio::test]
async fn a_debounced_enqueue_folds_its_version_with_its_payload() {
    let backend = fresh_backend().await;
    let debounced = |version: u32, n: u32| {
        let mut job = at_version("d", "q", version);
        job.payload = serde_json::value::to_raw_value(&serde_json::json!({ "n": n })).unwrap();
        job.coalesce = Some(Coalesce::Debounce {
            key: "key".into(),
            window: Duration::from_secs(1),
        });
        job
    };
    // Into the waiting job of the key, and within one batch.
    let waiting = put(&backend, vec![debounced(1, 1)], t0()).await[0];
    let folded = put(&backend, vec![debounced(2, 2)], at(10)).await[0];
    assert_eq!(folded, waiting, "the second enqueue folds into the first");
    let record = read(&backend, waiting).await;
    assert_eq!((record.version, record.payload.get()), (2, r#"{"n":2}"#));

    let batch = vec![debounced(1, 3), debounced(3, 4)];
    let mut other = batch;
    for job in &mut other {
        job.coalesce = Some(Coalesce::Debounce {
            key: "other".into(),
            window: Duration::from_secs(1),
        });
    }
    let ids = put(&backend, other, at(20)).await;
    assert_eq!(ids[0], ids[1]);
    let record = read(&backend, ids[0]).await;
    assert_eq!((record.version, record.payload.get()), (3, r#"{"n":4}"#));
}

#[tokio::test]
async fn the_limited_fetch_takes_only_the_versions_known() {
    let backend = fresh_backend().await;
    backend
        .set_limits(SetLimitsParams {
            queue: "limited".into(),
            limits: QueueLimits::default().concurrency(10),
        })
        .await
        .expect("set limits");
    // A queue with a concurrency (read like the plain fetch reads it) and a keyed queue (read
    // by the keyed scan), each with versions 3, 1, 2 of a job and one of another name.
    let mut ids = Vec::new();
    for queue in ["limited", "keyed"] {
        for (version, offset) in [(3, -3_000), (1, -2_000), (2, -1_000)] {
            let mut job = at_version("evolving", queue, version);
            job.run_at = at(offset);
            if queue == "keyed" {
                job.key_limits = Some(KeyLimits {
                    key: format!("k{version}"),
                    concurrency: Some(5),
                    rate: None,
                });
            }
            ids.extend(put(&backend, vec![job], at(offset)).await);
        }
        ids.extend(put(&backend, vec![at_version("other", queue, 1)], t0()).await);
    }
    let got = fetch_known(&backend, &["limited", "keyed"], vec![known("evolving", 2)]).await;
    let mut taken: Vec<JobId> = got.iter().map(|j| j.record.id).collect();
    taken.sort_unstable_by_key(|id| ids.iter().position(|i| i == id));
    assert_eq!(taken, [ids[1], ids[2], ids[5], ids[6]], "versions 1 and 2");
    for untouched in [ids[0], ids[3], ids[4], ids[7]] {
        let r = read(&backend, untouched).await;
        assert_eq!((r.status, r.attempt), (JobStatus::Pending, 0));
    }
    // A name listed twice counts with its newest version.
    let twice = vec![known("evolving", 1), known("evolving", 3)];
    let got = fetch_known(&backend, &["limited", "keyed"], twice).await;
    let mut taken: Vec<JobId> = got.iter().map(|j| j.record.id).collect();
    taken.sort_unstable_by_key(|id| ids.iter().position(|i| i == id));
    assert_eq!(taken, [ids[0], ids[4]]);
}

/// Queues without keyed jobs are fetched by `fetch_unkeyed` alone (the keyed function is
/// dropped here, so a fetch through it would fail), within their limits and taking only the
/// versions the worker knows.
#[tokio::test]
async fn the_unkeyed_limited_fetch_takes_only_the_versions_known() {
    let backend = fresh_backend().await;
    backend
        .set_limits(SetLimitsParams {
            queue: "limited".into(),
            limits: QueueLimits::default().concurrency(2),
        })
        .await
        .expect("set limits");
    sqlx::raw_sql(&format!(
        "SET search_path TO \"{}\";
         DROP FUNCTION fetch_limited(text[], timestamptz, int8, text, timestamptz, text[],
             int4[], int4[], int8[], bool[], bool[], int8, text, int4[]);
         DROP FUNCTION fetch_limited(text[], timestamptz, int8, text, timestamptz, text[],
             int4[], int4[], int8[], bool[], bool[], int8, text, int4[], uuid[], uuid[]);
         RESET search_path;",
        backend.schema_name()
    ))
    .execute(backend.pool())
    .await
    .expect("drop the keyed fetch");
    let mut ids = Vec::new();
    for (version, offset) in [(3, -3_000), (1, -2_000), (2, -1_000), (1, -500)] {
        let mut job = at_version("evolving", "limited", version);
        job.run_at = at(offset);
        ids.extend(put(&backend, vec![job], at(offset)).await);
    }
    let got = fetch_known(&backend, &["limited"], vec![known("evolving", 2)]).await;
    let taken: Vec<JobId> = got.iter().map(|j| j.record.id).collect();
    assert_eq!(
        taken,
        [ids[1], ids[2]],
        "versions 1 and 2, within the limit"
    );
    let r = read(&backend, ids[0]).await;
    assert_eq!((r.status, r.attempt), (JobStatus::Pending, 0));
    let full = fetch_known(&backend, &["limited"], vec![known("evolving", 2)]).await;
    assert!(full.is_empty(), "the two still run");
}

#[tokio::test]
async fn the_plain_fetch_counts_a_name_listed_twice_with_its_newest_version() {
    let backend = fresh_backend().await;
    let ids = put(
        &backend,
        vec![at_version("e", "a", 2), at_version("e", "b", 3)],
        t0(),
    )
    .await;
    let twice = || vec![known("e", 2), known("e", 1)];
    // One queue (fetch_one.sql), then two (fetch.sql).
    let got = fetch_known(&backend, &["a"], twice()).await;
    assert_eq!(
        got.iter().map(|j| j.record.id).collect::<Vec<_>>(),
        [ids[0]]
    );
    assert!(fetch_known(&backend, &["a", "b"], twice()).await.is_empty());
    let got = fetch_known(&backend, &["a", "b"], vec![known("e", 1), known("e", 3)]).await;
    assert_eq!(
        got.iter().map(|j| j.record.id).collect::<Vec<_>>(),
        [ids[1]]
    );
}

/// From a schema at migration 7 with a job stored: 0008 keeps the table's storage (no rewrite),
/// the job reads back at version 1, the catalog is a table of `jsonb`, and one `fetch_limited`
/// is left, the one taking the versions.
#[tokio::test]
async fn migration_8_adds_versions_in_place() {
    let backend = fresh_backend().await;
    let schema = backend.schema_name().to_string();
    let migration_6 = include_str!("../../migrations/0006_flow.sql");
    let function = &migration_6[migration_6
        .find("CREATE FUNCTION fetch_limited(")
        .expect("0006 creates the limited fetch")..];
    sqlx::raw_sql(&format!(
        "BEGIN;
         SET LOCAL search_path TO \"{schema}\";
         DROP TABLE job_types;
         DROP FUNCTION fetch_limited(text[], timestamptz, int8, text, timestamptz, text[],
             int4[], int4[], int8[], bool[], bool[], int8, text, int4[], uuid[], uuid[]);
         DROP FUNCTION fetch_limited(text[], timestamptz, int8, text, timestamptz, text[],
             int4[], int4[], int8[], bool[], bool[], int8, text, int4[]);
         ALTER TABLE jobs DROP COLUMN version;
         {function}
         DELETE FROM _jobs_migrations WHERE version = 8;
         COMMIT;"
    ))
    .execute(backend.pool())
    .await
    .expect("back to migration 7");
    let old = new_job("e", "q");
    sqlx::query(&format!(
        "INSERT INTO \"{schema}\".jobs (id, name, queue, payload, priority, run_at, status,
             max_attempts, backoff, created_at)
         VALUES ($1, 'e', 'q', '{{}}', 0, $2, 'pending', 3, $3::jsonb, $2)"
    ))
    .bind(old.id.0)
    .bind(t0())
    .bind(serde_json::to_string(&old.backoff).unwrap())
    .execute(backend.pool())
    .await
    .expect("a job stored at migration 7");
    let storage = "SELECT relfilenode::int8 FROM pg_class
                   WHERE oid = '{schema}.jobs'::regclass";
    let before = scalar(&backend, storage).await;

    backend.migrate().await.expect("upgrade");
    assert_eq!(scalar(&backend, storage).await, before, "no table rewrite");
    assert_eq!(read(&backend, old.id).await.version, 1);
    let info: String = sqlx::query_scalar(
        "SELECT data_type::text FROM information_schema.columns
         WHERE table_schema = $1 AND table_name = 'job_types' AND column_name = 'info'",
    )
    .bind(&schema)
    .fetch_one(backend.pool())
    .await
    .unwrap();
    assert_eq!(info, "jsonb");
    let functions: Vec<i16> = sqlx::query_scalar(
        "SELECT p.pronargs FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = $1 AND p.proname = 'fetch_limited'",
    )
    .bind(&schema)
    .fetch_all(backend.pool())
    .await
    .unwrap();
    assert_eq!(functions, [14], "only the function taking the versions");
}

/// A worker of the release before migration 0010 calls the limited fetch without ended leases:
/// its signature still leases within the queue's concurrency, counting every running job.
#[tokio::test]
async fn the_limited_fetch_of_the_release_before_still_holds_the_limit() {
    let backend = fresh_backend().await;
    backend
        .set_limits(SetLimitsParams {
            queue: "old".into(),
            limits: QueueLimits::default().concurrency(2),
        })
        .await
        .expect("limits");
    put(
        &backend,
        (0..5).map(|_| new_job("e", "old")).collect(),
        t0(),
    )
    .await;
    let now = t0().to_rfc3339();
    let old_fetch = format!(
        "SELECT count(*) FROM {{schema}}.fetch_limited(
             ARRAY['old'], '{now}', 10, 'w', '{now}'::timestamptz + interval '30 s', NULL,
             ARRAY[2], ARRAY[NULL::int4], ARRAY[NULL::int8], ARRAY[false], ARRAY[true], 1000,
             'old-release', NULL)"
    );
    assert_eq!(scalar(&backend, &old_fetch).await, 2, "up to the limit");
    assert_eq!(scalar(&backend, &old_fetch).await, 0, "its two still run");
}
