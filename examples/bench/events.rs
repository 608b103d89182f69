//! W9, event latency: a subscriber in another process (in-process on the memory backend)
//! receives each job's completed event; the latency runs from the worker's completion write
//! being acknowledged (its `on_completed` hook) to the subscriber receiving the event, both
//! read from the system clock in microseconds.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobs::{AnyBackend, EventKind, JobId, Operations, Received};
use tokio::sync::Notify;

use crate::backends::{self, fresh_backend, BackendKind};
use crate::{
    child, now_us, percentiles, print, produce_paced, run_worker_until, worker, Line, Probe,
};

/// The subscriber: prints `ready`, then `<job id> <received at, µs>` for each of `n` completed
/// events, then exits.
pub(crate) async fn subscriber(backend: &AnyBackend, n: u64, out: &mut impl Write) {
    let mut events = backend.job_events(&["email"]).await.expect("subscribe");
    writeln!(out, "ready").expect("stdout");
    out.flush().expect("stdout");
    let mut seen = 0;
    while seen < n {
        match events.recv().await.expect("the stream is open") {
            Received::Event(e) if e.kind == EventKind::Completed => {
                writeln!(out, "{} {}", e.id, now_us()).expect("stdout");
                seen += 1;
            }
            Received::Event(_) => {}
            Received::Missed => eprintln!("W9 subscriber: events were missed"),
        }
    }
    out.flush().expect("stdout");
}

/// The subscriber child process of W9.
pub(crate) async fn subscriber_child(kind: BackendKind, n: u64) {
    let backend = backends::connect(kind).await;
    subscriber(&backend, n, &mut std::io::stdout().lock()).await;
}

/// W9: 2,000 jobs (fewer for smoke runs) at 200 jobs/s.
pub(crate) async fn w9(kind: BackendKind, n: u64, concurrency: usize, args: &clap::ArgMatches) {
    let n = n.min(2_000);
    let backend = fresh_backend(kind).await;
    let acked: Arc<Mutex<HashMap<JobId, i64>>> = Arc::default();
    let record = acked.clone();
    let w = worker(&backend, concurrency, Arc::new(Probe::default())).on_completed(move |e| {
        record.lock().unwrap().insert(e.id, now_us());
    });
    let stop = Arc::new(Notify::new());
    let running = tokio::spawn(run_worker_until(w, stop.clone()));

    let (received, notes) = if kind.shared_across_processes() {
        let mut sub = child(args, "subscriber", &["-n", &n.to_string()]);
        let mut lines = BufReader::new(sub.stdout.take().expect("piped")).lines();
        let ready = lines.next().expect("a line").expect("readable");
        assert_eq!(ready, "ready");
        // Read while producing: a full pipe would hold the subscriber up.
        let collect = tokio::task::spawn_blocking(move || {
            let lines: Vec<String> = lines.map_while(Result::ok).collect();
            sub.wait().expect("the subscriber exits");
            lines
        });
        produce_paced(&backend, n).await;
        let lines = tokio::time::timeout(Duration::from_secs(60), collect)
            .await
            .expect("the subscriber got every event")
            .expect("collector");
        (lines, "subscriber in its own process, 200 jobs/s")
    } else {
        let listening = backend.clone();
        let sub = tokio::spawn(async move {
            let mut out = Vec::new();
            subscriber(&listening, n, &mut out).await;
            String::from_utf8(out).expect("utf-8")
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        produce_paced(&backend, n).await;
        let out = sub.await.expect("subscriber task");
        let lines = out.lines().skip(1).map(str::to_string).collect();
        (
            lines,
            "subscriber on its own task (the memory backend lives in one process), 200 jobs/s",
        )
    };
    stop.notify_one();
    running.await.expect("worker task");
    let acked = acked.lock().unwrap();
    let latencies: Vec<Duration> = received
        .iter()
        .filter_map(|line| {
            let (id, at) = line.split_once(' ')?;
            let id: JobId = id.parse().ok()?;
            let at: i64 = at.parse().ok()?;
            Some(Duration::from_micros((at - acked.get(&id)?).max(0) as u64))
        })
        .collect();
    assert_eq!(
        latencies.len() as u64,
        n,
        "every completion heard and matched"
    );
    print(
        kind,
        Line {
            workload: "W9",
            n,
            concurrency,
            jobs_per_s: None,
            latency_ms: Some(percentiles(latencies)),
            notes: notes.into(),
        },
    );
}
