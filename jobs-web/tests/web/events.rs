//! `api/events` streams the job events of the store as a worker runs a job.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use jobs_core::testing::Echo;
use jobs_core::{AnyBackend, JobExt, Worker};
use tower::ServiceExt;

use crate::support::{on_every_store, Web};

/// The queue of the conformance jobs.
const QUEUE: &str = "conformance";

on_every_store!(events_stream_a_completion);

async fn events_stream_a_completion(b: AnyBackend) {
    let web = Web::new(&b);
    let request = Request::get(format!("/api/events?queue={QUEUE}"))
        .body(Body::empty())
        .unwrap();
    let response = web.router().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = Worker::new(b.clone()).register::<Echo>().queues([QUEUE]);
    let running = tokio::spawn(worker.run_until(async {
        let _ = stopped.await;
    }));
    let id = Echo { n: 21 }.enqueue(&b).await.unwrap().id();

    let mut seen = String::new();
    let wanted =
        format!(r#""id":"{id}","name":"conformance.echo","queue":"{QUEUE}","kind":"completed""#);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !seen.contains(&wanted) {
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .unwrap_or_else(|_| panic!("no completion event within 20 s; got {seen}"))
            .expect("the stream goes on")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            seen.push_str(std::str::from_utf8(&data).unwrap());
        }
    }
    assert!(seen.contains("event: job\ndata: {"), "{seen}");
    assert!(seen.contains(r#""kind":"started""#), "{seen}");
    let _ = stop.send(());
    running.await.unwrap().unwrap();
}
