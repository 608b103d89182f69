//! The facade end to end: `#[job]` jobs enqueued through `jobs::connect(url)` and run by a
//! worker, on every backend compiled in; the operations API; the test helpers; URL errors.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use jobs::prelude::*;
use jobs::{JobStatus, Operations, Worker};
use serde::{Deserialize, Serialize};

#[path = "end_to_end/app_testing.rs"]
mod app_testing;
#[path = "end_to_end/bench_peers.rs"]
mod bench_peers;
#[path = "support/examples.rs"]
mod examples;
#[path = "end_to_end/operations.rs"]
mod operations;
#[path = "end_to_end/urls.rs"]
mod urls;
#[path = "end_to_end/workflow.rs"]
mod workflow;

struct Greeter {
    greeting: &'static str,
    calls: AtomicU32,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Greeted {
    text: String,
    attempt: u32,
}

#[job(
    queue = "e2e",
    attempts = 2,
    backoff = "fixed(10ms)",
    name = "e2e.greet"
)]
async fn greet(
    name: String,
    greeter: State<Greeter>,
    ctx: JobContext,
) -> Result<Greeted, JobError> {
    greeter.calls.fetch_add(1, Ordering::SeqCst);
    ctx.progress(75).await?;
    Ok(Greeted {
        text: format!("{}, {name}", greeter.greeting),
        attempt: ctx.attempt(),
    })
}

#[job(queue = "e2e", unique = "welcome:{user_id}", name = "e2e.welcome_once")]
async fn welcome_once(user_id: i64) {
    let _ = user_id;
}

/// A name no other test run uses (`jobs_test_<unix secs>_<random>`; old ones are cleaned up by
/// the backends' own test suites).
fn isolated_name() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    format!(
        "jobs_test_{secs}_{}",
        &jobs::JobId::new().to_string().replace('-', "")[20..]
    )
}

/// Every backend compiled in, each reached through `jobs::connect(url)` and isolated in a
/// store of its own by a URL option (a schema, a key prefix).
async fn backends() -> Vec<jobs::AnyBackend> {
    #[allow(unused_mut)]
    let mut all = vec![jobs::connect("memory://").await.expect("memory backend")];
    #[cfg(feature = "postgres")]
    {
        let url = std::env::var("JOBS_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let url = format!("{url}?schema={}", isolated_name());
        all.push(jobs::connect(&url).await.expect("PostgreSQL"));
    }
    #[cfg(feature = "redis")]
    {
        let url = std::env::var("JOBS_TEST_REDIS_URL")
            .unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
        let url = format!("{url}?prefix={}", isolated_name());
        all.push(jobs::connect(&url).await.expect("Redis"));
    }
    all
}

fn worker(backend: &jobs::AnyBackend) -> Worker {
    Worker::new(backend.clone())
        .queues(["e2e"])
        .poll_interval(Duration::from_millis(10))
        .state(Greeter {
            greeting: "hello",
            calls: AtomicU32::new(0),
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_jobs_run_on_every_backend() {
    for backend in backends().await {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(worker(&backend).run_until(async {
            let _ = stopped.await;
        }));
        let handle = Greet::new("ada".into()).enqueue(&backend).await.unwrap();
        let greeted = handle.wait(&backend).await.unwrap();
        assert_eq!(
            greeted,
            Greeted {
                text: "hello, ada".into(),
                attempt: 1
            }
        );
        let record = handle.record(&backend).await.unwrap();
        assert_eq!(
            (record.status, record.progress, &*record.name),
            (JobStatus::Completed, 75, "e2e.greet")
        );
        assert_eq!(record.max_attempts, 2);
        let _ = stop.send(());
        running.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn unique_attribute_dedupes_on_every_backend() {
    for backend in backends().await {
        let first = WelcomeOnce::new(9).enqueue(&backend).await.unwrap();
        let again = WelcomeOnce::new(9).enqueue(&backend).await.unwrap();
        let other = WelcomeOnce::new(10).enqueue(&backend).await.unwrap();
        assert!(!first.is_duplicate() && again.is_duplicate() && !other.is_duplicate());
        assert_eq!(again.id(), first.id());
        assert_ne!(other.id(), first.id());
        let record = first.record(&backend).await.unwrap();
        assert_eq!(record.unique_key.as_deref(), Some("welcome:9"));
    }
}

#[test]
fn attribute_jobs_are_registered_by_name() {
    use jobs::Job as _;
    assert_eq!(
        (Greet::NAME, WelcomeOnce::NAME),
        ("e2e.greet", "e2e.welcome_once")
    );
}

#[tokio::test]
async fn the_job_fn_stays_callable() {
    let greeter = State::new(Greeter {
        greeting: "hi",
        calls: AtomicU32::new(0),
    });
    let out = jobs::testing::perform(Greet::new("grace".into()))
        .state_arc(greeter.0.clone())
        .await
        .unwrap();
    assert_eq!(
        out,
        Greeted {
            text: "hi, grace".into(),
            attempt: 1
        }
    );
    assert_eq!(greeter.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn connect_rejects_bad_urls_clearly() {
    let err = jobs::connect("localhost:5432")
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "`localhost:5432` is not a backend URL: expected SCHEME://…"
    );
    let err = jobs::connect("amqp://localhost")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unsupported backend URL scheme `amqp`"),
        "{err}"
    );
    #[cfg(not(feature = "postgres"))]
    {
        let err = jobs::connect("postgres://localhost/x")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("need the `postgres` feature"), "{err}");
    }
    #[cfg(not(feature = "redis"))]
    {
        let err = jobs::connect("redis://localhost")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("need the `redis` feature"), "{err}");
    }
}

#[tokio::test]
async fn named_memory_stores_are_shared_in_process() {
    let producer = jobs::connect("memory://shop").await.unwrap();
    let consumer = jobs::connect("memory://shop").await.unwrap();
    let id = WelcomeOnce::new(1).enqueue(&producer).await.unwrap().id();
    assert_eq!(consumer.job(id).await.unwrap().id, id);
    let fresh = jobs::connect("memory://").await.unwrap();
    assert!(matches!(fresh.job(id).await, Err(jobs::Error::NotFound(_))));
}

#[tokio::test]
async fn a_missing_state_stops_the_worker_at_start() {
    let backend = jobs::connect("memory://").await.unwrap();
    let err = Worker::new(backend)
        .queues(["e2e"])
        .run_until(async {})
        .await
        .unwrap_err();
    let jobs::Error::Start(problems) = &err else {
        panic!("not a start error: {err}");
    };
    assert!(
        problems.iter().any(|p| matches!(p,
            jobs::StartProblem::MissingState { job, type_name }
                if job == "e2e.greet" && type_name.ends_with("Greeter"))),
        "{problems:?}"
    );
}

/// Held by each test that runs the benchmark example: its runs share the bench's database and
/// its Redis db 5, which each workload clears first.
fn bench_runs() -> std::sync::MutexGuard<'static, ()> {
    static RUNS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    RUNS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The JSON lines the benchmark example printed, one per line of its output.
fn bench_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    std::str::from_utf8(stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The JSON lines of a successful run of the benchmark example with `args` (under
/// [`bench_runs`]'s lock).
fn run_bench(args: &[&str]) -> Vec<serde_json::Value> {
    let _runs = bench_runs();
    let out = std::process::Command::new(bench_binary())
        .args(args)
        .output()
        .expect("the bench runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    bench_lines(&out.stdout)
}

/// The benchmark example, which `cargo test` builds beside the tests.
fn bench_binary() -> std::path::PathBuf {
    examples::example("bench")
}

/// The benchmark example runs every workload of the protocol with a small N on each backend
/// compiled in and prints one valid JSON line each.
#[test]
fn the_bench_runs_every_workload() {
    let _runs = bench_runs();
    let bench = bench_binary();
    let mut kinds = vec!["memory"];
    if cfg!(feature = "postgres") {
        kinds.push("postgres");
    }
    if cfg!(feature = "redis") {
        kinds.push("redis");
    }
    for kind in kinds {
        let out = std::process::Command::new(&bench)
            .args(["--backend", kind, "-n", "300", "--retained", "2000"])
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", bench.display()));
        assert!(
            out.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines = bench_lines(&out.stdout);
        let workloads: Vec<&str> = lines
            .iter()
            .map(|l| l["workload"].as_str().unwrap())
            .collect();
        // A server's round trip comes first, and each workload's ratio to its ceiling last;
        // what the store and the bench spent per job follows each write ceiling, W1a, W1b and
        // W2. W1a runs 3 rounds beside the single writes, and PostgreSQL's W2 beside the
        // claim-and-finish.
        let server = kind != "memory";
        let mut expected: Vec<&str> = Vec::new();
        if server {
            expected.push("ceiling-round-trip");
        }
        let w1a = ["W1a", "W1a-store"];
        if server {
            expected.extend(round_lines(
                &w1a,
                &["ceiling-single", "ceiling-single-store"],
            ));
        } else {
            expected.extend(w1a);
        }
        expected.extend(["W1b", "W1b-store"]);
        let w2 = ["W2", "W2-store"];
        if kind == "postgres" {
            expected.extend(round_lines(&w2, &["ceiling-drain", "ceiling-drain-store"]));
        } else {
            expected.extend(w2);
        }
        expected.extend(["W3", "W4", "W5", "W6a", "W6b", "W7", "W8", "W8", "W9"]);
        if server {
            expected.push("ceiling-ratios");
        }
        assert_eq!(workloads, expected, "{kind}");
        for line in &lines {
            assert_eq!(
                (line["system"].as_str(), line["backend"].as_str()),
                (Some("jobs"), Some(kind))
            );
            if line["workload"] == "ceiling-ratios" {
                let notes = line["notes"].as_str().unwrap_or_default();
                assert!(notes.contains("W3 p50 = "), "W3's ratio missing: {line}");
                let mut rounds = vec![("W1a", "ceiling-single")];
                if kind == "postgres" {
                    rounds.push(("W2", "ceiling-drain"));
                }
                for (workload, ceiling) in rounds {
                    assert_median_of_ceiling_rounds(&lines, notes, workload, ceiling);
                }
                continue;
            }
            if line["workload"]
                .as_str()
                .is_some_and(|w| w.ends_with("-store"))
            {
                // "Redis used 19.20 µs of CPU per job, …" or "PostgreSQL wrote 1249 bytes of WAL
                // per job, …; its processes used 24.00 µs of CPU per job" (the server's), then
                // "this process used 3.10 µs of CPU per job …" (the bench's own, the only one of
                // the memory backend): positive costs.
                let notes = line["notes"].as_str().unwrap_or_default();
                let figure = |after: &str| {
                    notes
                        .split(after)
                        .nth(1)
                        .and_then(|rest| rest.split(' ').next())
                        .and_then(|n| n.parse::<f64>().ok())
                };
                let server = match kind {
                    "redis" => Some("Redis used "),
                    "postgres" => Some("PostgreSQL wrote "),
                    _ => None,
                };
                if let Some(server) = server {
                    assert!(figure(server).is_some_and(|v| v > 0.0), "{line}");
                }
                // PostgreSQL's CPU, read from /proc in ticks of 10 ms: none in a part shorter
                // than a tick, but always there.
                if kind == "postgres" {
                    let cpu = figure("its processes used ");
                    assert!(cpu.is_some_and(|v| v >= 0.0), "{line}");
                }
                let own = figure("this process used ");
                assert!(own.is_some_and(|v| v > 0.0), "{line}");
                continue;
            }
            if line["workload"] == "W6a" || line["workload"] == "W6b" {
                let notes = line["notes"].as_str().unwrap_or_default();
                assert!(notes.contains("/W2 = "), "the ratio to W2: {line}");
            }
            if line["workload"] == "W4" {
                assert_median_of_rounds(line);
            }
            // A rate, or latencies (printed to the ns: a memory call may take well under a µs).
            let measured = line["jobs_per_s"].as_f64().or(line["max_ms"].as_f64());
            assert!(measured.is_some_and(|v| v > 0.0), "{line}");
        }
    }
}

/// W4's line gives W4/W2 as the median of the ratios of its rounds (3 by default), which it
/// lists: "… W4/W2 = 0.950, the median of 3 rounds … (0.990, 0.950, 0.910)".
fn assert_median_of_rounds(line: &serde_json::Value) {
    let notes = line["notes"].as_str().unwrap_or_default();
    let number = |s: &str| {
        s.trim()
            .parse::<f64>()
            .unwrap_or_else(|e| panic!("{e}: {line}"))
    };
    let (_, after) = notes.split_once("W4/W2 = ").expect("the ratio");
    let median = number(after.split(',').next().unwrap_or_default());
    assert!(after.contains("the median of 3 rounds"), "{line}");
    let listed = after.rsplit_once('(').map(|(_, l)| l.trim_end_matches(')'));
    let mut ratios: Vec<f64> = listed
        .expect("the rounds")
        .split(", ")
        .map(number)
        .collect();
    assert_eq!(ratios.len(), 3, "{line}");
    assert!(ratios.iter().all(|r| *r > 0.0), "{line}");
    ratios.sort_unstable_by(f64::total_cmp);
    assert_eq!(median, ratios[1], "{line}");
}

/// The lines of 3 rounds of a workload whose runs print `ours` beside references that print
/// `references`: ours then theirs, theirs then ours, ours then theirs.
fn round_lines<T: Copy>(ours: &[T], references: &[T]) -> Vec<T> {
    [ours, references, references, ours, ours, references].concat()
}

/// With `--no-ceilings` the workloads run alone: once each, no ceiling and no ratio to one.
#[cfg(feature = "postgres")]
#[test]
fn the_bench_runs_its_workloads_alone_without_ceilings() {
    let lines = run_bench(&[
        "--backend",
        "postgres",
        "-n",
        "300",
        "--no-ceilings",
        "--workload",
        "W1a",
        "--workload",
        "W2",
        "--workload",
        "W3",
    ]);
    let workloads: Vec<&str> = (lines.iter())
        .map(|l| l["workload"].as_str().unwrap())
        .collect();
    assert_eq!(workloads, ["W1a", "W1a-store", "W2", "W2-store", "W3"]);
}

/// `notes` give `workload`'s ratio to `ceiling` as the median of the ratios of its 3 rounds,
/// the i-th of the workload's lines beside the i-th of the ceiling's: "W1a = 0.652 of …, the
/// median of 3 rounds (0.652, 0.826, 0.522)".
fn assert_median_of_ceiling_rounds(
    lines: &[serde_json::Value],
    notes: &str,
    workload: &str,
    ceiling: &str,
) {
    let rates = |name: &str| -> Vec<f64> {
        (lines.iter())
            .filter(|l| l["workload"] == name)
            .map(|l| l["jobs_per_s"].as_f64().expect("a rate"))
            .collect()
    };
    let (ours, theirs) = (rates(workload), rates(ceiling));
    assert_eq!((ours.len(), theirs.len()), (3, 3), "{workload}: {notes}");
    let mut ratios: Vec<f64> = ours.iter().zip(&theirs).map(|(o, c)| o / c).collect();
    let part = (notes.split("; "))
        .find_map(|p| p.strip_prefix(&format!("{workload} = ")))
        .unwrap_or_else(|| panic!("no {workload} in {notes}"));
    // The lines give rates to 0.1 jobs/s, so a ratio from them may differ in its last digit.
    let close = |printed: f64, from_lines: f64| (printed - from_lines).abs() < 0.0015;
    let (printed, listed) = part
        .split_once(", the median of 3 rounds (")
        .expect("the rounds");
    let listed: Vec<f64> = (listed.trim_end_matches(')').split(", "))
        .map(|r| r.parse().expect("a ratio"))
        .collect();
    assert_eq!(listed.len(), 3, "{workload}: {notes}");
    for (printed, from_lines) in listed.iter().zip(&ratios) {
        assert!(
            close(*printed, *from_lines),
            "{workload}: listed {listed:?}, the lines give {ratios:?}: {notes}"
        );
    }
    ratios.sort_unstable_by(f64::total_cmp);
    let printed: f64 = (printed.split(' ').next().unwrap_or_default())
        .parse()
        .expect("a ratio");
    assert!(
        close(printed, ratios[1]),
        "{workload}: printed {printed}, the lines give {}: {notes}",
        ratios[1]
    );
}

#[job(queue = "e2e", name = "e2e.noted")]
async fn noted(user_id: i64, note: Option<String>) {
    let _ = (user_id, note);
}

/// With `--layout streams` the bench runs the Redis workloads on the layout on Redis Streams
/// (W1b and W2, which it builds so far), and its lines name the backend `redis+streams`.
#[cfg(feature = "redis")]
#[test]
fn the_bench_runs_redis_on_streams() {
    let lines = run_bench(&[
        "--backend",
        "redis",
        "--layout",
        "streams",
        "-n",
        "300",
        "--workload",
        "W1b",
        "--workload",
        "W2",
    ]);
    assert!(lines.iter().all(|l| l["backend"] == "redis+streams"));
    for workload in ["W1b", "W2"] {
        let line = lines
            .iter()
            .find(|l| l["workload"] == workload)
            .unwrap_or_else(|| panic!("a {workload} line"));
        assert_eq!(line["n"], 300);
        assert!(line["jobs_per_s"].as_f64().unwrap() > 0.0, "{line}");
        let store = lines
            .iter()
            .find(|l| l["workload"] == format!("{workload}-store"))
            .unwrap_or_else(|| panic!("a {workload}-store line"));
        assert!(
            store["notes"].as_str().unwrap().starts_with("Redis used "),
            "{store}"
        );
    }
}

/// A payload stored before an `Option` parameter was added still decodes, the new field `None`
/// (each field goes through `jobs::__private::Payload`, and `Option` fields say `default`).
#[test]
fn a_missing_option_field_decodes_as_none() {
    let old: Noted = serde_json::from_str(r#"{"user_id":3}"#).unwrap();
    assert_eq!((old.user_id, old.note), (3, None));
    let missing = serde_json::from_str::<Noted>(r#"{"note":"x"}"#).unwrap_err();
    assert!(
        missing.to_string().contains("missing field `user_id`"),
        "{missing}"
    );
    let round = serde_json::to_string(&Noted::new(4, Some("hi".into()))).unwrap();
    assert_eq!(round, r#"{"user_id":4,"note":"hi"}"#);
}
