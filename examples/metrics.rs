//! The worker's metrics scraped by Prometheus: a worker, the `metrics` feature and the
//! Prometheus exporter serving http://127.0.0.1:9000/metrics.
//!
//! ```text
//! cargo run --example metrics --features metrics                 # in memory, no server
//! JOBS_URL=postgres://postgres@127.0.0.1/test cargo run --example metrics --features metrics,postgres
//! curl -s http://127.0.0.1:9000/metrics | grep '^jobs_'
//! ```
//!
//! It enqueues a few jobs (one fails until it is dead), then one more every second, and runs a
//! worker until ctrl-c. `jobs_core::metrics` lists every metric.

use std::net::SocketAddr;
use std::time::Duration;

use jobs::prelude::*;
use jobs::Worker;
use metrics_exporter_prometheus::PrometheusBuilder;

/// Where the exporter listens.
const LISTEN: ([u8; 4], u16) = ([127, 0, 0, 1], 9000);

/// Resizes an image (here: sleeps a little).
#[job(queue = "images")]
async fn resize(image: u64) -> Result<u64, JobError> {
    tokio::time::sleep(Duration::from_millis(5 + image % 20)).await;
    Ok(image)
}

/// Always fails: two attempts, then dead.
#[job(queue = "images", attempts = 2, backoff = "fixed(100ms)")]
async fn corrupt_upload(image: u64) -> Result<(), JobError> {
    Err(JobError::retryable(format!(
        "image {image} does not decode"
    )))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Install the recorder before the worker starts: it describes the metrics to it.
    let seconds = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 300.0];
    PrometheusBuilder::new()
        .with_http_listener(LISTEN)
        .set_buckets(&seconds)?
        .install()?;

    let url = std::env::var("JOBS_URL").unwrap_or_else(|_| "memory://".into());
    let backend = jobs::connect(&url).await?;
    for image in 0..10 {
        Resize::new(image).enqueue(&backend).await?;
    }
    CorruptUpload::new(99).enqueue(&backend).await?;

    let producer = backend.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(1));
        for image in 100.. {
            every.tick().await;
            if let Err(e) = Resize::new(image).enqueue(&producer).await {
                eprintln!("could not enqueue: {e}");
            }
        }
    });

    println!(
        "worker on {url}; scrape http://{}/metrics (ctrl-c stops)",
        SocketAddr::from(LISTEN)
    );
    Worker::new(backend).queues(["images"]).run().await?;
    Ok(())
}
