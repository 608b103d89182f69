//! Bad input gets a clear error, and hostile values are only ever data.

use std::time::Duration;

use jobs_core::{Backend, Clock, EnqueueParams, Error, JobId, NewJob, SystemClock};
use jobs_postgres::PgBackend;
use serde_json::value::RawValue;

use crate::support::{backend_in, fresh_backend, new_schema, pool};

#[tokio::test]
async fn unreachable_server_is_a_connect_error() {
    let err = PgBackend::connect("postgres://postgres:hunter2@127.0.0.1:1/test")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with("cannot connect to postgres://postgres:***@127.0.0.1:1/test"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
}

#[tokio::test]
async fn bad_url_is_invalid() {
    for url in [
        "postgres://postgres:hunter2@[::1/test",
        "postgres://h/db?sslmode=sometimes",
    ] {
        let err = PgBackend::connect(url).await.unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "{url}: {err:?}");
        let text = err.to_string();
        assert!(text.starts_with("invalid PostgreSQL URL"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }
}

#[tokio::test]
async fn schema_names_must_be_plain_identifiers() {
    let pool = pool().await;
    for name in [
        "Jobs",
        "jobs; DROP TABLE x",
        "a\"b",
        "",
        "9lives",
        "pg_jobs",
    ] {
        let err = PgBackend::from_pool(pool.clone()).schema(name).unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "{name}: {err:?}");
        assert!(err.to_string().contains("schema name"), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrating_concurrently_and_again_is_harmless() {
    let schema = new_schema();
    let mut starting = Vec::new();
    for _ in 0..4 {
        let backend = PgBackend::from_pool(pool().await).schema(&schema).unwrap();
        starting.push(tokio::spawn(async move { backend.migrate().await }));
    }
    for task in starting {
        task.await.expect("task").expect("migrate");
    }
    let backend = backend_in(&schema).await;
    backend.migrate().await.expect("migrate again");
}

#[tokio::test]
async fn hostile_payloads_and_keys_round_trip() {
    let backend = fresh_backend().await;
    let payload =
        r#"{"name":"Robert'); DROP TABLE jobs;--","quote":"\"","nul":"\u0000","emoji":"🎉"}"#;
    let key = "k'); DELETE FROM jobs; -- \"$1\" \\";
    let job = NewJob {
        id: JobId::new(),
        name: "it's \"quoted\"".into(),
        queue: "q'; --".into(),
        payload: RawValue::from_string(payload.into()).unwrap(),
        priority: 0,
        run_at: SystemClock.now(),
        max_attempts: 1,
        backoff: jobs_core::Backoff::fixed(Duration::from_secs(1)),
        timeout: None,
        unique_key: Some(key.into()),
        trace_context: Some("'".into()),
    };
    let now = SystemClock.now();
    let first = backend
        .enqueue(EnqueueParams {
            jobs: vec![job.clone()],
            now,
        })
        .await
        .expect("enqueue");
    let mut again = job.clone();
    again.id = JobId::new();
    let second = backend
        .enqueue(EnqueueParams {
            jobs: vec![again],
            now,
        })
        .await
        .expect("enqueue again");
    assert!(!first[0].duplicate);
    assert_eq!((second[0].id, second[0].duplicate), (job.id, true));
    let record = backend.job(job.id).await.unwrap().expect("stored");
    assert_eq!(record.payload.get(), payload);
    assert_eq!(record.name, job.name);
    assert_eq!(record.queue, job.queue);
    assert_eq!(record.unique_key.as_deref(), Some(key));
    assert_eq!(record.trace_context.as_deref(), Some("'"));
}
