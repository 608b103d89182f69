//! Bad input gets a clear error, hostile values are only ever data, and the URL's options
//! configure the backend.

use std::time::{Duration, Instant};

use jobs_core::{Backend, Error, JobExt, ReadParams};
use jobs_postgres::PgBackend;
use serde_json::value::RawValue;
use sqlx::Connection;

use crate::support::{
    backend_in, fresh_backend, new_job, new_schema, pool, put, rows_in, t0, url_with, Record,
};

#[tokio::test]
async fn a_refused_connection_is_a_connect_error_at_once() {
    let started = Instant::now();
    let err = PgBackend::connect("postgres://postgres:hunter2@127.0.0.1:1/test?connect_timeout=5s")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "took {:?} to report a refused connection",
        started.elapsed()
    );
    let text = err.to_string();
    assert!(
        text.starts_with("cannot connect to postgres://postgres:***@127.0.0.1:1/test"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
}

#[tokio::test]
async fn a_bad_url_is_invalid() {
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
async fn an_unknown_url_option_is_invalid_and_names_the_valid_ones() {
    let err = PgBackend::connect("postgres://postgres:hunter2@127.0.0.1:1/test?shema=billing")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Invalid(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("unknown option `shema`"), "{text}");
    for valid in [
        "schema",
        "pool_size",
        "connect_timeout",
        "acquire_timeout",
        "durable_completions",
        "sslmode",
    ] {
        assert!(text.contains(valid), "{valid} missing from: {text}");
    }
    assert!(!text.contains("hunter2"), "{text}");
}

#[tokio::test]
async fn a_bad_option_value_is_invalid() {
    for (options, option) in [
        ("pool_size=lots", "pool_size"),
        ("connect_timeout=10", "connect_timeout"),
        ("acquire_timeout=soon", "acquire_timeout"),
        ("schema=Billing", "schema"),
        ("durable_completions=yes", "durable_completions"),
        ("durable_completions=", "durable_completions"),
    ] {
        let err = PgBackend::connect(&url_with(options)).await.unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "{options}: {err:?}");
        assert!(err.to_string().contains(option), "{options}: {err}");
    }
}

#[tokio::test]
async fn url_options_configure_the_backend() {
    let schema = new_schema();
    let backend = PgBackend::connect(&url_with(&format!(
        "schema={schema}&pool_size=3&acquire_timeout=2s&application_name=jobs-url-test"
    )))
    .await
    .expect("connect");
    assert_eq!(backend.schema_name(), schema);
    assert_eq!(backend.pool().options().get_max_connections(), 3);
    assert_eq!(
        backend.pool().options().get_acquire_timeout(),
        Duration::from_secs(2)
    );
    let name: String = sqlx::query_scalar("SELECT current_setting('application_name')")
        .fetch_one(backend.pool())
        .await
        .unwrap();
    assert_eq!(name, "jobs-url-test");
    // `connect` migrated the schema the URL named, and jobs go there.
    Record::new(1).enqueue(&backend).await.expect("enqueue");
    assert_eq!(rows_in(backend.pool(), &schema).await, 1);
}

/// A default isolation stricter than READ COMMITTED (set here by the URL's own `options`, as a
/// server, database or role could) does not reach the pool `connect` makes: its limited
/// fetches count what the fetch before them committed.
#[tokio::test]
async fn connect_runs_its_sessions_at_read_committed() {
    let strict = "options=-c%20default_transaction_isolation%3Drepeatable%5C%20read";
    let isolation = "SELECT current_setting('transaction_isolation')";
    let mut bare = sqlx::PgConnection::connect(&url_with(strict))
        .await
        .expect("a bare connection");
    let bare_isolation: String = sqlx::query_scalar(isolation)
        .fetch_one(&mut bare)
        .await
        .unwrap();
    assert_eq!(
        bare_isolation, "repeatable read",
        "the URL sets a stricter default"
    );
    let url = url_with(&format!("schema={}&{strict}", new_schema()));
    let backend = PgBackend::connect(&url).await.expect("connect");
    let used: String = sqlx::query_scalar(isolation)
        .fetch_one(backend.pool())
        .await
        .unwrap();
    assert_eq!(used, "read committed");
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
async fn hostile_payloads_keys_and_tags_round_trip() {
    let backend = fresh_backend().await;
    let payload =
        r#"{"name":"Robert'); DROP TABLE jobs;--","quote":"\"","nul":"\u0000","emoji":"🎉"}"#;
    let key = "k'); DELETE FROM jobs; -- \"$1\" \\";
    let mut job = new_job("it's \"quoted\"", "q'; --");
    job.payload = RawValue::from_string(payload.into()).unwrap();
    job.unique_key = Some(key.into());
    job.trace_context = Some("'".into());
    job.tags = vec![
        "'); DROP TABLE jobs; --".into(),
        "{a,b}".into(),
        "\"".into(),
    ];
    let first = put(&backend, vec![job.clone()], t0()).await;
    let mut again = job.clone();
    again.id = jobs_core::JobId::new();
    let second = backend
        .enqueue(jobs_core::EnqueueParams {
            jobs: vec![again],
            now: t0(),
        })
        .await
        .expect("enqueue again");
    assert_eq!(first, [job.id]);
    assert_eq!((second[0].id, second[0].duplicate), (job.id, true));
    let record = backend
        .read(ReadParams { id: job.id })
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(record.payload.get(), payload);
    assert_eq!(*record.name, job.name);
    assert_eq!(*record.queue, job.queue);
    assert_eq!(record.unique_key.as_deref(), Some(key));
    assert_eq!(record.trace_context.as_deref(), Some("'"));
    assert_eq!(record.tags, job.tags);
}
