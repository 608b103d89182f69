//! Traces across processes (feature `otel`): a job enqueued inside a span of this process runs
//! in a worker process whose span of the first attempt is a child of the enqueuer's `send`
//! span, in the same trace, and whose retry is linked to it; both carry the messaging
//! attributes. Each process exports its spans into memory; the worker process prints its own.

use std::process::{Command, Stdio};
use std::time::Duration;

use jobs::prelude::*;
use jobs::{Operations, Worker};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde::{Deserialize, Serialize};
use tracing_subscriber::layer::SubscriberExt;

/// Set in the worker process: the URL of the store.
const CHILD_ENV: &str = "JOBS_TRACES_TEST_URL";

/// Fails its first attempt, so the second is a retry.
#[job(
    queue = "traced",
    attempts = 2,
    backoff = "fixed(10ms)",
    name = "traces.flaky"
)]
async fn flaky(ctx: JobContext) -> Result<u32, JobError> {
    if ctx.attempt() == 1 {
        return Err(JobError::retryable("first attempt fails"));
    }
    Ok(ctx.attempt())
}

/// A span as one process exported it, as the worker process prints it.
#[derive(Debug, Serialize, Deserialize)]
struct Exported {
    name: String,
    trace: String,
    span: String,
    parent: String,
    links: Vec<(String, String)>,
    attributes: Vec<(String, String)>,
}

impl Exported {
    fn of(span: &SpanData) -> Self {
        let text = |v: &Value| v.as_str().into_owned();
        Exported {
            name: span.name.to_string(),
            trace: span.span_context.trace_id().to_string(),
            span: span.span_context.span_id().to_string(),
            parent: span.parent_span_id.to_string(),
            links: span
                .links
                .iter()
                .map(|l| {
                    let cx = &l.span_context;
                    (cx.trace_id().to_string(), cx.span_id().to_string())
                })
                .collect(),
            attributes: span
                .attributes
                .iter()
                .map(|kv| (kv.key.to_string(), text(&kv.value)))
                .collect(),
        }
    }

    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A tracer provider exporting into memory, and a subscriber sending `tracing` spans to it.
fn exporting() -> (
    InMemorySpanExporter,
    SdkTracerProvider,
    impl tracing::Subscriber + Send + Sync,
) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("traces-test"));
    (
        exporter,
        provider,
        tracing_subscriber::registry().with(layer),
    )
}

/// The worker process: runs the worker until the job completed, then prints its spans.
fn worker_process(url: &str) {
    let (exporter, provider, subscriber) = exporting();
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let backend = jobs::connect(url).await.expect("connect");
        let done = backend.clone();
        Worker::new(backend)
            .queues(["traced"])
            .cron(false)
            .poll_interval(Duration::from_millis(20))
            .run_until(async move {
                while done.queues().await.expect("queues")[0].counts.completed == 0 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
            .await
            .expect("the worker runs");
    });
    provider.force_flush().expect("flush");
    for span in exporter.get_finished_spans().expect("spans") {
        println!("{}", serde_json::to_string(&Exported::of(&span)).unwrap());
    }
}

#[test]
fn a_job_continues_its_enqueuers_trace_in_the_worker_process() {
    if let Ok(url) = std::env::var(CHILD_ENV) {
        return worker_process(&url);
    }
    let redis = std::env::var("JOBS_TEST_REDIS_URL").unwrap_or("redis://127.0.0.1:6379".into());
    let url = format!("{redis}?prefix=traces-{}", std::process::id());

    // Enqueue inside a request span of this process.
    let (exporter, provider, subscriber) = exporting();
    tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let backend = jobs::connect(&url).await.expect("connect");
            let request = tracing::info_span!("request");
            let _entered = request.enter();
            Flaky::new().enqueue(&backend).await.expect("enqueue");
        });
    });
    provider.force_flush().expect("flush");
    let ours: Vec<Exported> = exporter
        .get_finished_spans()
        .expect("spans")
        .iter()
        .map(Exported::of)
        .collect();
    let request = ours
        .iter()
        .find(|s| s.name == "request")
        .expect("the request span");
    let send = ours
        .iter()
        .find(|s| s.name == "send traced")
        .expect("the send span");
    assert_eq!(
        (send.trace.as_str(), send.parent.as_str()),
        (request.trace.as_str(), request.span.as_str())
    );
    assert_eq!(send.attribute("messaging.operation.type"), Some("send"));
    assert_eq!(send.attribute("messaging.destination.name"), Some("traced"));

    // The worker, in a process of its own.
    let out = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "a_job_continues_its_enqueuers_trace_in_the_worker_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &url)
        .stderr(Stdio::inherit())
        .output()
        .expect("the worker process runs");
    assert!(out.status.success(), "the worker process failed");
    let theirs: Vec<Exported> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            // The test harness may have printed `test … ` on the same line first.
            serde_json::from_str(&line[line.find('{')?..]).ok()
        })
        .collect();
    let attempts: Vec<&Exported> = theirs
        .iter()
        .filter(|s| s.name == "process traced")
        .collect();
    assert_eq!(attempts.len(), 2, "one span per attempt: {theirs:?}");
    let first = attempts
        .iter()
        .find(|s| s.attribute("job.attempt") == Some("1"))
        .expect("attempt 1");
    let retry = attempts
        .iter()
        .find(|s| s.attribute("job.attempt") == Some("2"))
        .expect("attempt 2");
    assert_eq!(
        (first.trace.as_str(), first.parent.as_str()),
        (send.trace.as_str(), send.span.as_str()),
        "the first attempt is a child of the send span"
    );
    assert_ne!(retry.trace, send.trace, "a retry starts a trace of its own");
    assert_eq!(
        retry.links,
        vec![(send.trace.clone(), send.span.clone())],
        "and links to the send span"
    );
    for span in [first, retry] {
        assert_eq!(span.attribute("messaging.system"), Some("jobs"));
        assert_eq!(span.attribute("messaging.operation.type"), Some("process"));
        assert_eq!(span.attribute("messaging.destination.name"), Some("traced"));
        assert!(span.attribute("messaging.message.id").is_some());
    }
    forget_keys(&redis, &format!("*traces-{}*", std::process::id()));
}

/// Deletes the test's keys from the shared server.
fn forget_keys(url: &str, pattern: &str) {
    use jobs::redis::redis::Commands;
    let mut conn = jobs::redis::redis::Client::open(url)
        .and_then(|client| client.get_connection())
        .expect("a connection");
    let keys: Vec<String> = conn.keys(pattern).expect("KEYS");
    if !keys.is_empty() {
        let _: () = conn.del(keys).expect("DEL");
    }
}
