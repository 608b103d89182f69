//! `State<T>` and `JobContext` parameters are injected in any order, and a worker runs the job.

use std::any::type_name;
use std::time::Duration;

use jobs::prelude::*;
use jobs::{Job, Worker};

pub struct Mailer {
    from: &'static str,
}

pub struct Greeting {
    text: &'static str,
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sent {
    from: String,
    to: String,
    body: String,
    attempt: u32,
}

#[job(queue = "greetings")]
async fn send_greeting(
    mailer: State<Mailer>,
    to: String,
    ctx: JobContext,
    greeting: jobs::State<Greeting>,
    again: jobs::JobContext,
) -> Result<Sent, JobError> {
    ctx.progress(50).await?;
    assert_eq!(ctx.id(), again.id());
    Ok(Sent {
        from: mailer.from.to_string(),
        to,
        body: greeting.text.to_string(),
        attempt: ctx.attempt(),
    })
}

fn main() {
    // Only `to` is payload.
    let job = SendGreeting::new("alice".into());
    assert_eq!(serde_json::to_string(&job).unwrap(), r#"{"to":"alice"}"#);
    let required: Vec<&str> = SendGreeting::required_state()
        .iter()
        .map(|k| k.type_name)
        .collect();
    assert_eq!(required, [type_name::<Mailer>(), type_name::<Greeting>()]);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let backend = jobs::connect("memory://").await.unwrap();
        let handle = job.enqueue(&backend).await.unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let worker = Worker::new(backend.clone())
            .queues(["greetings"])
            .state(Mailer {
                from: "noreply@example.com",
            })
            .state(Greeting { text: "hello" });
        let running = tokio::spawn(worker.run_until(async {
            let _ = stopped.await;
        }));
        let sent = tokio::time::timeout(Duration::from_secs(30), handle.wait(&backend))
            .await
            .expect("the job ran within 30 s")
            .unwrap();
        assert_eq!(
            sent,
            Sent {
                from: "noreply@example.com".into(),
                to: "alice".into(),
                body: "hello".into(),
                attempt: 1,
            }
        );
        stop.send(()).unwrap();
        running.await.unwrap().unwrap();
    });
}
