//! `durable_completions`: the worker's batched completions commit with `synchronous_commit`
//! off by default, and with the session's own (`on`) when the option is on, whether it is
//! given in the URL or by the builder.

use std::time::Duration;

use jobs_core::{Backend, CompleteParams, Completion, FetchParams, JobStatus, ReadParams};
use jobs_postgres::PgBackend;
use serde_json::value::to_raw_value;

use crate::support::{at, fresh_backend, new_job, new_schema, put, t0, url_with};

/// Records, in `commit_settings`, the `synchronous_commit` in force when each completing
/// transaction commits: a deferred trigger runs just before the commit, in the transaction
/// itself, so it sees what the commit will do, whatever other tests do on the server.
async fn watch_commits(backend: &PgBackend) {
    let schema = format!("\"{}\"", backend.schema_name());
    for statement in [
        format!("CREATE TABLE {schema}.commit_settings (job uuid NOT NULL, synchronous_commit text NOT NULL)"),
        format!(
            "CREATE FUNCTION {schema}.record_commit_setting() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 INSERT INTO {schema}.commit_settings
                 VALUES (NEW.id, current_setting('synchronous_commit'));
                 RETURN NULL;
             END $$"
        ),
        format!(
            "CREATE CONSTRAINT TRIGGER record_commit_setting AFTER UPDATE ON {schema}.jobs
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.status = 'completed')
             EXECUTE FUNCTION {schema}.record_commit_setting()"
        ),
    ] {
        sqlx::query(&statement)
            .execute(backend.pool())
            .await
            .expect("set up the commit watch");
    }
}

/// Completes two jobs in one batch through `backend` and returns the `synchronous_commit`
/// their completion committed with, once per job.
async fn completion_commits_with(backend: &PgBackend) -> Vec<String> {
    watch_commits(backend).await;
    put(backend, vec![new_job("d", "d"), new_job("d", "d")], t0()).await;
    let leased = backend
        .fetch(FetchParams {
            ended: Vec::new(),
            known: None,
            queues: vec!["d".into()],
            limit: 2,
            worker: "w".into(),
            lease_for: Duration::from_secs(60),
            now: at(1),
            flow: Vec::new(),
            reserve: 0,
            deliver: 0,
        })
        .await
        .expect("fetch");
    assert_eq!(leased.len(), 2);
    let items = leased
        .iter()
        .map(|job| Completion {
            lease: job.lease(),
            result: to_raw_value(&1).unwrap(),
        })
        .collect();
    let accepted = backend
        .complete(CompleteParams { items, now: at(2) })
        .await
        .expect("complete");
    assert_eq!(accepted, [true, true]);
    for job in &leased {
        let record = backend
            .read(ReadParams { id: job.record.id })
            .await
            .expect("read")
            .expect("the job exists");
        assert_eq!(record.status, JobStatus::Completed);
    }
    sqlx::query_scalar(&format!(
        "SELECT synchronous_commit FROM \"{}\".commit_settings ORDER BY job",
        backend.schema_name()
    ))
    .fetch_all(backend.pool())
    .await
    .expect("read the commit settings")
}

/// A backend connected by URL with `options` (besides a schema of its own), its sessions'
/// `synchronous_commit` set `on` explicitly so the test does not depend on the server's.
async fn connect_with(options: &str) -> PgBackend {
    let schema = new_schema();
    let url = url_with(&format!(
        "schema={schema}&options=-c%20synchronous_commit%3Don{options}"
    ));
    PgBackend::connect(&url).await.expect("connect")
}

#[tokio::test]
async fn completions_commit_without_waiting_for_the_flush_by_default() {
    for backend in [
        connect_with("").await,
        connect_with("&durable_completions=false").await,
    ] {
        assert_eq!(completion_commits_with(&backend).await, ["off", "off"]);
    }
}

#[tokio::test]
async fn durable_completions_commit_synchronously() {
    let by_url = connect_with("&durable_completions=true").await;
    assert_eq!(completion_commits_with(&by_url).await, ["on", "on"]);
    let by_builder = fresh_backend().await.durable_completions(true);
    assert_eq!(completion_commits_with(&by_builder).await, ["on", "on"]);
}

#[tokio::test]
async fn the_builder_keeps_durable_completions_across_a_schema_change() {
    let backend = fresh_backend()
        .await
        .durable_completions(true)
        .schema(&new_schema())
        .expect("a valid schema name");
    backend.migrate().await.expect("migrate");
    assert_eq!(completion_commits_with(&backend).await, ["on", "on"]);
}
