//! The benchmark of ../shared/bench/PROTOCOL.md: workloads W1a, W1b, W2, W3, W4, W5, W6 (a, b),
//! W7, W8 and W9, one JSON line each.
//!
//! ```text
//! cargo run --release --example bench -- --backend memory
//! cargo run --release --example bench --features postgres -- --backend postgres
//! cargo run --release --example bench --features redis -- --backend redis -n 500
//! ```
//!
//! The store's own ceilings are measured beside the workloads they bound ([`ceilings`]: the
//! round trip before them, the write ceilings in W1a's and PostgreSQL W2's rounds), and after
//! them each figure's ratio to its ceiling is printed. After W1a, W1b,
//! W2 and the write ceilings, a `-store` line gives what the server itself spent per job
//! ([`store_cost`]): Redis' CPU and script time, PostgreSQL's WAL; and this process's CPU.
//!
//! W3's producer, W5's and W7's four workers and W9's subscriber are child processes (this binary
//! re-executed with `--role`), except on the memory backend, which lives in one process. With
//! `--peers` (Redis, PostgreSQL), the peers of the goals run beside W1b, W2 and W3 ([`peers`]).

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{Arg, ArgAction, ArgMatches};
use jobs::prelude::*;
use jobs::{AnyBackend, Retention, Worker};
use jobs_core::{Backend as _, Clock as _, CountsParams};
use tokio::sync::Notify;

mod backends;
mod backlog;
mod ceilings;
mod events;
mod flow;
mod operations;
mod peers;
mod rounds;
mod store_cost;
use backends::{fresh_backend, BackendKind};
use ceilings::Ceiling;

/// Handler-side records: pickup latencies (µs) for W3 and, in worker children, the ids run.
/// Otherwise the handler does nothing, as the protocol asks.
#[derive(Default)]
struct Probe {
    latencies_us: Mutex<Vec<u64>>,
    ran: Mutex<Vec<jobs::JobId>>,
    record_latencies: bool,
    record_ids: bool,
}

fn now_us() -> i64 {
    jobs_core::SystemClock.now().timestamp_micros()
}

#[job(queue = "email", attempts = 3, backoff = "exponential")]
async fn bench_email(
    user_id: u64,
    email: String,
    t: i64,
    probe: State<Probe>,
    ctx: JobContext,
) -> Result<(), JobError> {
    let _ = (user_id, email);
    if probe.record_latencies {
        let latency = (now_us() - t).max(0) as u64;
        probe.latencies_us.lock().unwrap().push(latency);
    }
    if probe.record_ids {
        probe.ran.lock().unwrap().push(ctx.id());
    }
    Ok(())
}

fn job(i: u64) -> BenchEmail {
    BenchEmail::new(i, format!("user{i}@example.com"), now_us())
}

struct Line {
    workload: &'static str,
    n: u64,
    concurrency: usize,
    jobs_per_s: Option<f64>,
    latency_ms: Option<(f64, f64, f64)>,
    notes: String,
}

fn print(kind: BackendKind, line: Line) {
    let (p50, p99, max) = match line.latency_ms {
        // To the nanosecond: the memory backend answers some calls in well under a µs.
        Some((a, b, c)) => (format!("{a:.6}"), format!("{b:.6}"), format!("{c:.6}")),
        None => ("null".into(), "null".into(), "null".into()),
    };
    let rate = line.jobs_per_s.map_or("null".into(), |r| format!("{r:.1}"));
    println!(
        "{{\"system\": \"jobs\", \"version\": \"{}\", \"backend\": \"{}\", \"workload\": \"{}\", \"n\": {}, \
         \"concurrency\": {}, \"jobs_per_s\": {rate}, \"p50_ms\": {p50}, \"p99_ms\": {p99}, \"max_ms\": {max}, \
         \"notes\": {:?}}}",
        env!("CARGO_PKG_VERSION"),
        kind.label(),
        line.workload,
        line.n,
        line.concurrency,
        line.notes
    );
    let _ = std::io::stdout().flush();
}

/// Prints a line of ratios, `workload`, with `notes` (nothing when there are none).
fn print_ratios(kind: BackendKind, workload: &'static str, notes: Vec<String>) {
    if notes.is_empty() {
        return;
    }
    let line = Line {
        workload,
        n: 0,
        concurrency: 1,
        jobs_per_s: None,
        latency_ms: None,
        notes: notes.join("; "),
    };
    print(kind, line);
}

fn worker(backend: &AnyBackend, concurrency: usize, probe: Arc<Probe>) -> Worker {
    Worker::new(backend.clone())
        .queues(["email"])
        .concurrency(concurrency)
        .state_arc(probe)
}

/// Runs a worker until `done` is notified; returns when it has shut down.
async fn run_worker_until(w: Worker, done: Arc<Notify>) {
    w.run_until(async move { done.notified().await })
        .await
        .expect("worker");
}

pub(crate) async fn enqueue_bulk(backend: &AnyBackend, n: u64) {
    for start in (0..n).step_by(1_000) {
        let end = (start + 1_000).min(n);
        BenchEmail::enqueue_many(backend, (start..end).map(job))
            .await
            .expect("bulk enqueue");
    }
}

/// W1a: one awaited enqueue per job, from `producers` clients sharing the backend (one in the
/// protocol; more show how enqueues from concurrent requests of one service scale).
async fn w1a(kind: BackendKind, n: u64, producers: u64) -> f64 {
    let backend = fresh_backend(kind).await;
    let meter = store_cost::start(kind).await;
    let started = Instant::now();
    let mut clients = tokio::task::JoinSet::new();
    for p in 0..producers {
        let backend = backend.clone();
        clients.spawn(async move {
            for i in (p..n).step_by(producers as usize) {
                job(i).enqueue(&backend).await.expect("enqueue");
            }
        });
    }
    while let Some(done) = clients.join_next().await {
        done.expect("a producer");
    }
    let rate = n as f64 / started.elapsed().as_secs_f64();
    let cost = meter.end(n).await;
    let notes = match producers {
        1 => "one awaited enqueue per job".to_string(),
        p => format!("{p} producers sharing one backend, each awaiting one enqueue at a time"),
    };
    let line = Line {
        workload: "W1a",
        n,
        concurrency: producers as usize,
        jobs_per_s: Some(rate),
        latency_ms: None,
        notes,
    };
    print(kind, line);
    cost.print("W1a-store");
    rate
}

async fn w1b(kind: BackendKind, n: u64) -> f64 {
    let backend = fresh_backend(kind).await;
    let meter = store_cost::start(kind).await;
    let started = Instant::now();
    enqueue_bulk(&backend, n).await;
    let rate = n as f64 / started.elapsed().as_secs_f64();
    let cost = meter.end(n).await;
    let line = Line {
        workload: "W1b",
        n,
        concurrency: 1,
        jobs_per_s: Some(rate),
        latency_ms: None,
        notes: "enqueue_many, batches of 1,000".into(),
    };
    print(kind, line);
    cost.print("W1b-store");
    rate
}

/// Drains `n` queued jobs with one worker leasing up to `prefetch` jobs beyond those running
/// (`None`: the worker's default, which adapts); returns jobs/s.
pub(crate) async fn drain(
    backend: &AnyBackend,
    n: u64,
    concurrency: usize,
    prefetch: Option<usize>,
    retention: Retention,
) -> f64 {
    let completed = Arc::new(AtomicU64::new(0));
    let all_done = Arc::new(Notify::new());
    let (seen, signal) = (completed.clone(), all_done.clone());
    let stop = Arc::new(Notify::new());
    let mut w = worker(backend, concurrency, Arc::new(Probe::default()));
    if let Some(prefetch) = prefetch {
        w = w.prefetch(prefetch);
    }
    let w = w.default_retention(retention).on_completed(move |_| {
        if seen.fetch_add(1, Ordering::Relaxed) + 1 == n {
            signal.notify_one();
        }
    });
    let started = Instant::now();
    let running = tokio::spawn(run_worker_until(w, stop.clone()));
    all_done.notified().await;
    let elapsed = started.elapsed();
    stop.notify_one();
    running.await.expect("worker task");
    let counts = backend
        .counts(CountsParams {
            queue: "email".into(),
        })
        .await
        .expect("counts");
    assert!(
        counts.pending + counts.running == 0,
        "jobs left: {counts:?}"
    );
    n as f64 / elapsed.as_secs_f64()
}

pub(crate) async fn w2(kind: BackendKind, n: u64, concurrency: usize) -> f64 {
    let backend = fresh_backend(kind).await;
    enqueue_bulk(&backend, n).await;
    let meter = store_cost::start(kind).await;
    let rate = drain(&backend, n, concurrency, None, Retention::default()).await;
    let cost = meter.end(n).await;
    let notes = "store-acknowledged completions counted; default retention (newest 10,000 completed per queue, 24 h), the worker's default prefetch (it adapts)";
    print(
        kind,
        Line {
            workload: "W2",
            n,
            concurrency,
            jobs_per_s: Some(rate),
            latency_ms: None,
            notes: notes.into(),
        },
    );
    cost.print("W2-store");
    rate
}

/// The middle value (the upper one of an even count).
pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    values[values.len() / 2]
}

/// p50, p99 and max of `samples`, in ms.
fn percentiles(mut samples: Vec<Duration>) -> (f64, f64, f64) {
    samples.sort_unstable();
    let ms = |d: Option<&Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1_000.0);
    let at = |p: f64| ms(samples.get(((samples.len() as f64 - 1.0) * p).round() as usize));
    (at(0.50), at(0.99), ms(samples.last()))
}

/// The jobs the protocol's W3 enqueues.
const W3_JOBS: u64 = 2_000;

/// W3 enqueues 2,000 jobs (fewer when `-n` is smaller, for smoke runs).
async fn w3(kind: BackendKind, n: u64, concurrency: usize, args: &ArgMatches) -> f64 {
    let n = n.min(W3_JOBS);
    let backend = fresh_backend(kind).await;
    let probe = Arc::new(Probe {
        record_latencies: true,
        ..Default::default()
    });
    let stop = Arc::new(Notify::new());
    let running = tokio::spawn(run_worker_until(
        worker(&backend, concurrency, probe.clone()),
        stop.clone(),
    ));
    tokio::time::sleep(Duration::from_millis(300)).await; // started and warm
    let notes = if kind.shared_across_processes() {
        let status = child(args, "producer", &["-n", &n.to_string()])
            .wait()
            .expect("producer process");
        assert!(status.success(), "producer failed");
        "producer in its own process, 200 jobs/s"
    } else {
        produce_paced(&backend, n).await;
        "producer on its own task (the memory backend lives in one process), 200 jobs/s"
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while (probe.latencies_us.lock().unwrap().len() as u64) < n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop.notify_one();
    running.await.expect("worker task");
    let latencies: Vec<Duration> = probe
        .latencies_us
        .lock()
        .unwrap()
        .iter()
        .map(|&us| Duration::from_micros(us))
        .collect();
    assert_eq!(latencies.len() as u64, n, "every job picked up");
    let latency = percentiles(latencies);
    let line = Line {
        workload: "W3",
        n,
        concurrency,
        jobs_per_s: None,
        latency_ms: Some(latency),
        notes: notes.into(),
    };
    print(kind, line);
    latency.0
}

/// Runs a lone client's work on a single-threaded runtime of its own, as a one-connection
/// producer would be deployed: no wake-ups cross threads.
fn one_client<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(work)
}

/// Runs the work `make` makes as [`one_client`] does, on a thread of its own (so that it can be
/// called from within the bench's own runtime); its result.
fn on_client_thread<T, Fut>(make: impl FnOnce() -> Fut + Send) -> T
where
    T: Send,
    Fut: std::future::Future<Output = T>,
{
    std::thread::scope(|s| {
        s.spawn(|| one_client(make()))
            .join()
            .expect("a lone client's thread")
    })
}

/// W3's producer process: connects, then enqueues at 200 jobs/s.
async fn produce_paced_fresh(kind: BackendKind, n: u64) {
    produce_paced(&backends::connect(kind).await, n).await
}

/// Enqueues `n` jobs at 200 jobs/s.
async fn produce_paced(backend: &AnyBackend, n: u64) {
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    for i in 0..n {
        tick.tick().await;
        job(i).enqueue(backend).await.expect("enqueue");
    }
}

async fn w5(kind: BackendKind, n: u64, concurrency: usize, args: &ArgMatches, w2_rate: f64) {
    const WORKERS: usize = 4;
    let backend = fresh_backend(kind).await;
    enqueue_bulk(&backend, n).await;
    if kind.shared_across_processes() {
        let mut children = spawn_workers(args, WORKERS, concurrency);
        let started = Instant::now();
        start_workers(&mut children);
        wait_all_completed(&backend, n, started).await;
        let elapsed = started.elapsed();
        let ran = stop_workers(children);
        report_w5(
            kind,
            n,
            concurrency,
            elapsed,
            &ran,
            w2_rate,
            "4 worker processes",
        );
    } else {
        let probe = Arc::new(Probe {
            record_ids: true,
            ..Default::default()
        });
        let started = Instant::now();
        let tasks: Vec<_> = (0..WORKERS)
            .map(|_| {
                let stop = Arc::new(Notify::new());
                let w = worker(&backend, concurrency, probe.clone())
                    .default_retention(Retention::all());
                (stop.clone(), tokio::spawn(run_worker_until(w, stop)))
            })
            .collect();
        wait_all_completed(&backend, n, started).await;
        let elapsed = started.elapsed();
        for (stop, task) in tasks {
            stop.notify_one();
            task.await.expect("worker task");
        }
        let ran = probe.ran.lock().unwrap().clone();
        let how = "4 workers in one process (the memory backend lives in one process)";
        report_w5(kind, n, concurrency, elapsed, &ran, w2_rate, how);
    }
}

/// A worker process and its stdout.
type WorkerChild = (Child, BufReader<ChildStdout>);

/// Spawns `n` worker processes of `concurrency`, each connected, its worker built, waiting for
/// the word to start: the clock starts with the workers, not with the processes.
fn spawn_workers(args: &ArgMatches, n: usize, concurrency: usize) -> Vec<WorkerChild> {
    let concurrency_arg = concurrency.to_string();
    let mut children: Vec<WorkerChild> = (0..n)
        .map(|_| {
            let mut c = child(args, "worker", &["--concurrency", &concurrency_arg]);
            let out = BufReader::new(c.stdout.take().expect("piped"));
            (c, out)
        })
        .collect();
    for (_, out) in &mut children {
        let mut line = String::new();
        out.read_line(&mut line).expect("a worker's stdout");
        assert_eq!(line.trim(), "ready", "a worker child failed to start");
    }
    children
}

/// Tells the worker processes to start.
fn start_workers(children: &mut [WorkerChild]) {
    for (c, _) in children {
        writeln!(c.stdin.as_mut().expect("piped"), "go").expect("a worker's stdin");
    }
}

/// Stops the worker processes (SIGTERM: each shuts down gracefully and prints the ids it ran);
/// the ids they ran.
fn stop_workers(children: Vec<WorkerChild>) -> Vec<jobs::JobId> {
    let mut ran = Vec::new();
    for (mut c, out) in children {
        let _ = Command::new("kill")
            .args(["-TERM", &c.id().to_string()])
            .status();
        ran.extend(
            out.lines()
                .map_while(Result::ok)
                .filter_map(|l| l.parse::<jobs::JobId>().ok()),
        );
        c.wait().expect("worker exit");
    }
    ran
}

fn report_w5(
    kind: BackendKind,
    n: u64,
    concurrency: usize,
    elapsed: Duration,
    ran: &[jobs::JobId],
    w2_rate: f64,
    how: &str,
) {
    let distinct: HashSet<_> = ran.iter().collect();
    let twice = ran.len() - distinct.len();
    let rate = n as f64 / elapsed.as_secs_f64();
    let notes = format!("{how} of concurrency {concurrency}; runs {}, distinct {}, run twice {twice}; W5/W2 = {:.3}", ran.len(), distinct.len(), rate / w2_rate);
    print(
        kind,
        Line {
            workload: "W5",
            n,
            concurrency: concurrency * 4,
            jobs_per_s: Some(rate),
            latency_ms: None,
            notes,
        },
    );
    assert_eq!(twice, 0, "a job ran twice");
}

async fn wait_all_completed(backend: &AnyBackend, n: u64, started: Instant) {
    loop {
        let c = backend
            .counts(CountsParams {
                queue: "email".into(),
            })
            .await
            .expect("counts");
        if c.completed >= n {
            return;
        }
        // Counting costs the store a read on every call, so it is asked rarely while the end is
        // far off (on PostgreSQL it reads the waiting and running rows): after half
        // the time the rest should take at the rate so far, at most 100 ms and at least 2 ms,
        // which ends within a few ms of the last completion.
        let rest = match c.completed {
            0 => Duration::from_millis(20),
            done => started.elapsed().mul_f64((n - done) as f64 / done as f64),
        };
        tokio::time::sleep((rest / 2).clamp(Duration::from_millis(2), Duration::from_millis(100)))
            .await;
    }
}

/// Re-executes this binary in a role.
fn child(args: &ArgMatches, role: &str, extra: &[&str]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().expect("own path"));
    cmd.args([
        "--role",
        role,
        "--backend",
        args.get_one::<String>("backend").expect("default"),
        "--layout",
        args.get_one::<String>("layout").expect("default"),
    ]);
    cmd.args(extra);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    cmd.spawn().expect("spawn child")
}

fn cli() -> clap::Command {
    clap::Command::new("bench")
        .about("The benchmark protocol's workloads, one JSON line each")
        .arg(
            Arg::new("backend")
                .long("backend")
                .default_value("memory")
                .value_parser(["memory", "postgres", "redis"]),
        )
        .arg(
            Arg::new("layout")
                .long("layout")
                .default_value("hash")
                .value_parser(["hash", "streams"])
                .help("Redis only: how the store is laid out (streams: the layout being built, see docs/redis-streams.md; it runs every workload)"),
        )
        .arg(
            Arg::new("n")
                .short('n')
                .long("n")
                .default_value("20000")
                .value_parser(clap::value_parser!(u64)),
        )
        .arg(
            Arg::new("concurrency")
                .long("concurrency")
                .default_value("16")
                .value_parser(clap::value_parser!(usize)),
        )
        .arg(
            Arg::new("producers")
                .long("producers")
                .help("W1a's concurrent clients (the protocol's W1a has one)")
                .default_value("1")
                .value_parser(clap::value_parser!(u64).range(1..)),
        )
        .arg(
            Arg::new("peers")
                .long("peers")
                .action(ArgAction::SetTrue)
                .help(
                    "Redis and PostgreSQL: also run the peers of the goals (on Redis BullMQ's \
                     W2 and Sidekiq's W1b and W3, on PostgreSQL graphile-worker's W2 and W3), \
                     each beside ours for --rounds rounds, and end with each median ratio",
                ),
        )
        .arg(
            Arg::new("no-ceilings")
                .long("no-ceilings")
                .action(ArgAction::SetTrue)
                .help(
                    "skip the store's ceilings (and the ratios to them): each workload runs \
                     once, alone, as a run under a profiler wants it",
                ),
        )
        .arg(
            Arg::new("rounds")
                .long("rounds")
                .help("W4's and W6's rounds (each drains a plain queue and the retained or limited one), W1a's and PostgreSQL W2's (each run beside its ceiling, unless --no-ceilings), and with --peers each peer's (the workload and the peer's); the median ratio is reported")
                .default_value("3")
                .value_parser(clap::value_parser!(u32).range(1..)),
        )
        .arg(
            Arg::new("retained")
                .long("retained")
                .default_value("1000000")
                .value_parser(clap::value_parser!(u64))
                .help("completed jobs retained for W4 and W8"),
        )
        .arg(
            Arg::new("metrics")
                .long("metrics")
                .action(ArgAction::SetTrue)
                .help("record the worker's metrics into a Prometheus recorder (build with --features metrics)"),
        )
        .arg(
            Arg::new("workload")
                .long("workload")
                .action(ArgAction::Append)
                .value_parser(["W1a", "W1b", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9"])
                .help("run only these (repeatable; W6 runs W6a and W6b)"),
        )
        .arg(Arg::new("role").long("role").hide(true).value_parser([
            "producer",
            "worker",
            "subscriber",
        ]))
}

fn main() {
    let args = cli().get_matches();
    let kind = BackendKind::parse(args.get_one::<String>("backend").expect("default"));
    backends::set_redis_layout(args.get_one::<String>("layout").expect("default"));
    let n = *args.get_one::<u64>("n").expect("default");
    let concurrency = *args.get_one::<usize>("concurrency").expect("default");
    if args.get_one::<String>("role").map(String::as_str) == Some("producer") {
        return one_client(produce_paced_fresh(kind, n));
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(run(args, kind, n, concurrency))
}

/// Installs a Prometheus recorder for the worker's metrics, when asked to.
fn record_metrics(args: &ArgMatches) {
    if !args.get_flag("metrics") {
        return;
    }
    if !cfg!(feature = "metrics") {
        panic!("--metrics needs the bench built with --features metrics");
    }
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .expect("a Prometheus recorder");
    eprintln!("bench: the worker's metrics go to a Prometheus recorder");
}

async fn run(args: ArgMatches, kind: BackendKind, n: u64, concurrency: usize) {
    record_metrics(&args);
    match args.get_one::<String>("role").map(String::as_str) {
        Some("worker") => return worker_child(kind, concurrency).await,
        Some("subscriber") => return events::subscriber_child(kind, n).await,
        _ => {}
    }
    let wanted: Vec<&str> = args
        .get_many::<String>("workload")
        .map(|w| w.map(String::as_str).collect())
        .unwrap_or_else(|| vec!["W1a", "W1b", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9"]);
    let retained = *args.get_one::<u64>("retained").expect("default");
    let rounds = *args.get_one::<u32>("rounds").expect("default") as usize;
    // The peers of each workload, none without --peers.
    let lineup = match (args.get_flag("peers"), peers::lineup(kind)) {
        (false, _) => peers::Lineup::default(),
        (true, Some(lineup)) => lineup,
        (true, None) => cli()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "--peers runs the peers of the Redis and PostgreSQL goals: give it with \
                 --backend redis or --backend postgres",
            )
            .exit(),
    };
    let mut pairs = peers::Pairs::default();
    // The round trip first, W3's ceiling; the write ceilings are measured in their workloads'
    // rounds.
    let measured = !args.get_flag("no-ceilings");
    let round_trip_ms = if measured && wanted.contains(&"W3") {
        fresh_backend(kind).await; // the bench database, made if missing
        ceilings::round_trip(kind)
    } else {
        None
    };
    let ceiling = |which| ceilings::reference(kind, n, which).filter(|_| measured);
    // Each round's (ours, the ceiling's) of W1a and W2, and W3's p50.
    let (mut w1a_pairs, mut w2_pairs) = (Vec::new(), Vec::new());
    let (mut w2_rate, mut w3_p50) = (None, None);
    for workload in wanted {
        match workload {
            "W1a" => {
                let producers = *args.get_one::<u64>("producers").expect("default");
                let ours = || async move { on_client_thread(|| w1a(kind, n, producers)) };
                let rate = ours().await;
                if let Some(single) = ceiling(Ceiling::Single) {
                    w1a_pairs = rounds::beside_one(rate, rounds, ours, single).await;
                }
            }
            "W1b" => {
                let rate = w1b(kind, n).await;
                if let Some(peer) = lineup.w1b {
                    let theirs = peers::reference(peer, n);
                    let ran = rounds::beside_one(rate, rounds, || w1b(kind, n), theirs).await;
                    pairs.w1b = Some((peer, ran));
                }
            }
            "W2" => {
                let rate = w2(kind, n, concurrency).await;
                w2_rate = Some(rate);
                // The peer's run and the claim-and-finish, each beside the same run of ours.
                let theirs = lineup.w2.map(|peer| peers::reference(peer, n));
                let drain = ceiling(Ceiling::Drain);
                let with_drain = drain.is_some();
                let references = theirs.into_iter().chain(drain).collect();
                let ours = || w2(kind, n, concurrency);
                let mut ran = rounds::beside(rate, rounds, ours, references)
                    .await
                    .into_iter();
                if let Some(peer) = lineup.w2 {
                    pairs.w2 = ran.next().map(|ran| (peer, ran));
                }
                if with_drain {
                    w2_pairs = ran.next().unwrap_or_default();
                }
            }
            "W3" => {
                let p50 = w3(kind, n, concurrency, &args).await;
                w3_p50 = Some(p50);
                if let Some(peer) = lineup.w3 {
                    let theirs = peers::reference(peer, n.min(W3_JOBS));
                    let ours = || w3(kind, n, concurrency, &args);
                    let ran = rounds::beside_one(p50, rounds, ours, theirs).await;
                    pairs.w3 = Some((peer, ran));
                }
            }
            "W4" => backlog::w4(kind, n, concurrency, retained, rounds).await,
            "W5" => {
                let base = match w2_rate {
                    Some(r) => r,
                    None => w2(kind, n, concurrency).await,
                };
                w5(kind, n, concurrency, &args, base).await
            }
            "W6" => flow::w6(kind, n, concurrency, rounds).await,
            "W7" => flow::w7(kind, n, concurrency, &args).await,
            "W8" => operations::w8(kind, retained).await,
            "W9" => events::w9(kind, n, concurrency, &args).await,
            _ => unreachable!("clap checked the names"),
        }
    }
    ceilings::report(kind, round_trip_ms, &w1a_pairs, &w2_pairs, w3_p50);
    pairs.report(kind);
}

/// A W5 worker process: connects, says `ready`, starts on a line from stdin, runs until SIGTERM,
/// then prints the ids it ran, one per line.
async fn worker_child(kind: BackendKind, concurrency: usize) {
    let backend = backends::connect(kind).await;
    let probe = Arc::new(Probe {
        record_ids: true,
        ..Default::default()
    });
    // Every completed job is kept: the parent counts them, and W7 reads their start times.
    let w = worker(&backend, concurrency, probe.clone()).default_retention(Retention::all());
    println!("ready");
    tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new()))
        .await
        .expect("stdin reader")
        .expect("the word to start");
    w.run().await.expect("worker");
    let mut out = std::io::stdout().lock();
    for id in probe.ran.lock().unwrap().iter() {
        let _ = writeln!(out, "{id}");
    }
}
