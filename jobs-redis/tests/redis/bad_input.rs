//! Bad input: prefixes with braces, and a server that restarts under a running worker.

use std::time::{Duration, Instant};

use jobs_core::{
    Backend, Error, Job, JobContext, JobError, JobExt, JobOptions, ReadParams, StateMap, Worker,
};
use jobs_redis::RedisBackend;
use serde::{Deserialize, Serialize};

use crate::support::{single_backend, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_with_a_brace_is_refused() {
    let backend = single_backend().await;
    for prefix in ["shop{1}", "}", "{"] {
        let err = backend.clone().prefix(prefix).unwrap_err();
        assert!(
            matches!(&err, Error::Invalid(m) if m.contains("contains a brace")),
            "{prefix}: {err:?}"
        );
    }
    assert!(backend.prefix("").is_err());
}

#[derive(Serialize, Deserialize)]
struct Double {
    n: u64,
}

impl Job for Double {
    const NAME: &'static str = "redis-test.double";
    type Output = u64;
    fn options() -> JobOptions {
        JobOptions {
            queue: "restart".into(),
            ..Default::default()
        }
    }
    async fn run(self, _ctx: JobContext, _state: StateMap) -> Result<u64, JobError> {
        Ok(self.n * 2)
    }
}

/// Enqueues `job`, retrying while the server is away.
async fn enqueue_soon(backend: &RedisBackend, n: u64) -> jobs_core::JobHandle<Double> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match (Double { n }).enqueue(backend).await {
            Ok(handle) => return handle,
            Err(e) => assert!(Instant::now() < deadline, "enqueue kept failing: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The server restarts (losing everything: no persistence) under a running worker: the worker
/// reconnects, its wake-ups resume, and jobs enqueued afterwards run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_carries_on_after_redis_restarts() {
    let server = Server::start();
    let backend = RedisBackend::connect(&server.url()).await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = Worker::new(backend.clone())
        .register::<Double>()
        .cron(false)
        // Only wake-ups pick jobs up quickly: the poll fallback is slower than the test allows.
        .poll_interval(Duration::from_secs(30));
    let running = tokio::spawn(worker.run_until(async {
        let _ = stopped.await;
    }));

    let first = enqueue_soon(&backend, 1).await;
    assert_eq!(first.wait(&backend).await.unwrap(), 2);

    let server = tokio::task::block_in_place(|| server.restart());
    // The first command after the restart may meet the dropped connection; the next reconnects.
    let deadline = Instant::now() + Duration::from_secs(10);
    let lost = loop {
        match backend.read(ReadParams { id: first.id() }).await {
            Ok(found) => break found.is_none(),
            Err(e) => assert!(Instant::now() < deadline, "reads kept failing: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(lost, "a server without persistence lost the job");
    let second = enqueue_soon(&backend, 2).await;
    let doubled = tokio::time::timeout(Duration::from_secs(10), second.wait(&backend)).await;
    assert_eq!(doubled.expect("the job ran after the restart").unwrap(), 4);

    let third = Double { n: 3 }.enqueue(&backend).await.unwrap();
    let started = Instant::now();
    let doubled = tokio::time::timeout(Duration::from_secs(5), third.wait(&backend)).await;
    assert_eq!(doubled.expect("woken after the restart").unwrap(), 6);
    eprintln!(
        "picked up {:?} after enqueue, post-restart",
        started.elapsed()
    );

    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    drop(server);
}
