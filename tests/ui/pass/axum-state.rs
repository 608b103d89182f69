//! A module of an axum service: `State` is axum's, and jobs name theirs `jobs::State<T>` or
//! `JobState<T>`, which a worker injects.

use std::time::Duration;

use axum::extract::State;
use jobs::prelude::*;
use jobs::{Job, Worker};

pub struct Mailer {
    from: &'static str,
}

/// An axum handler's extractor, beside the jobs below.
pub async fn health(State(mailer): State<&'static str>) -> &'static str {
    mailer
}

#[job(queue = "mail")]
async fn by_path(to: String, mailer: jobs::State<Mailer>) -> Result<String, JobError> {
    Ok(format!("{} -> {to}", mailer.from))
}

#[job(queue = "mail")]
async fn by_alias(
    to: String,
    mailer: JobState<Mailer>,
    ctx: JobContext,
) -> Result<String, JobError> {
    Ok(format!(
        "{} -> {to} (attempt {})",
        mailer.from,
        ctx.attempt()
    ))
}

fn main() {
    let required = |keys: Vec<jobs_core::StateKey>| -> Vec<&str> {
        keys.iter().map(|k| k.type_name).collect()
    };
    let mailer = std::any::type_name::<Mailer>();
    assert_eq!(required(ByPath::required_state()), [mailer]);
    assert_eq!(required(ByAlias::required_state()), [mailer]);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        assert_eq!(health(State("ok")).await, "ok");
        let backend = jobs::connect("memory://").await.unwrap();
        let by_path = ByPath::new("alice".into()).enqueue(&backend).await.unwrap();
        let by_alias = ByAlias::new("bob".into()).enqueue(&backend).await.unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let worker = Worker::new(backend.clone()).queues(["mail"]).state(Mailer {
            from: "noreply@example.com",
        });
        let running = tokio::spawn(worker.run_until(async {
            let _ = stopped.await;
        }));
        let within = |secs| Duration::from_secs(secs);
        let sent = tokio::time::timeout(within(30), by_path.wait(&backend))
            .await
            .expect("the job ran within 30 s")
            .unwrap();
        assert_eq!(sent, "noreply@example.com -> alice");
        let sent = tokio::time::timeout(within(30), by_alias.wait(&backend))
            .await
            .expect("the job ran within 30 s")
            .unwrap();
        assert_eq!(sent, "noreply@example.com -> bob (attempt 1)");
        stop.send(()).unwrap();
        running.await.unwrap().unwrap();
    });
}
