//! Worker processes sharing one store: the test binary re-executes itself, and the copy runs a
//! worker. Checks that each job runs exactly once across processes, that a job whose worker
//! process was killed with SIGKILL runs again elsewhere, and that during a rolling deploy an
//! older release's workers leave the newer release's jobs to the newer workers, and that flow
//! limits hold across them.
//!
//! A backend crate runs them with [`conformance_processes!`](crate::conformance_processes),
//! passing an `async fn(String) -> impl Backend` that connects to the store a name selects (a
//! schema, a key prefix): the parent and its children call it with the same name.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::support::{poll_until, worker, QUEUE};
use crate::*;

mod flow;

pub use flow::flow_limits_hold_across_processes;

/// Names the store a child connects to; a test run without it is not a child.
const STORE_ENV: &str = "JOBS_CONFORMANCE_STORE";
/// The child's lease, in milliseconds.
const LEASE_ENV: &str = "JOBS_CONFORMANCE_LEASE_MS";
/// Set in a child of the older release, which does not know [`Newer`].
const OLD_RELEASE_ENV: &str = "JOBS_CONFORMANCE_OLD_RELEASE";

/// The job the processes run: takes `ms` milliseconds, then prints `span <start> <end>` (its
/// run's wall-clock times in µs) and `ran <id>`; with `stall`, its first attempt never ends.
#[derive(Debug, Serialize, Deserialize)]
pub struct Tally {
    /// Returned as the result.
    pub n: u64,
    /// Whether the first attempt hangs (for the kill check).
    pub stall: bool,
    /// How long each attempt works.
    #[serde(default)]
    pub ms: u64,
}

impl Job for Tally {
    const NAME: &'static str = "conformance.tally";
    type Output = u64;
    fn options() -> JobOptions {
        in_queue()
    }
    async fn run(self, ctx: JobContext, _state: StateMap) -> Result<u64, JobError> {
        if self.stall && ctx.attempt() == 1 {
            std::future::pending::<()>().await;
        }
        let start = unix_micros();
        tokio::time::sleep(Duration::from_millis(self.ms)).await;
        println!("span {start} {}", unix_micros());
        say_ran(&ctx)?;
        Ok(self.n)
    }
}

/// The options of the processes' jobs: their queue, and the defaults.
fn in_queue() -> JobOptions {
    JobOptions {
        queue: QUEUE.into(),
        ..Default::default()
    }
}

/// Microseconds since the Unix epoch, comparable across processes.
fn unix_micros() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_micros()
}

/// Prints `ran <id>`, the line the parent reads to tell which process ran which job.
fn say_ran(ctx: &JobContext) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "ran {}", ctx.id())?;
    out.flush()
}

/// A job type only the newer release knows: prints `ran <id>` when it runs.
#[derive(Debug, Serialize, Deserialize)]
pub struct Newer {
    /// Returned as the result.
    pub n: u64,
}

impl Job for Newer {
    const NAME: &'static str = "conformance.newer";
    type Output = u64;
    fn options() -> JobOptions {
        in_queue()
    }
    async fn run(self, ctx: JobContext, _state: StateMap) -> Result<u64, JobError> {
        say_ran(&ctx)?;
        Ok(self.n)
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// The name `--exact` needs for the test `name` defined beside the caller (`module_path!()`).
pub fn sibling(module_path: &str, name: &str) -> String {
    match module_path.split_once("::") {
        Some((_, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    }
}

/// In a child (its environment names a store), runs a worker until SIGTERM; otherwise nothing.
pub fn child(connect: impl Connect) {
    let Ok(store) = std::env::var(STORE_ENV) else {
        return;
    };
    let lease_ms = std::env::var(LEASE_ENV)
        .ok()
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(5_000);
    let old_release = std::env::var_os(OLD_RELEASE_ENV).is_some();
    runtime().block_on(async {
        let backend = connect.connect(store).await;
        let worker = worker(&backend).register::<Tally>();
        let worker = if old_release {
            worker
        } else {
            worker.register::<Newer>()
        };
        worker
            .concurrency(16)
            .lease(Duration::from_millis(lease_ms))
            .rescue_interval(Duration::from_millis(100))
            .run()
            .await
            .expect("the worker process runs");
    });
}

/// A worker process, the `ran <id>` lines it prints and the spans of its runs.
struct Process {
    child: Child,
    lines: mpsc::Receiver<String>,
    spans: mpsc::Receiver<(u128, u128)>,
}

impl Process {
    fn spawn(test: &str, store: &str, lease_ms: u64) -> Self {
        Self::spawn_release(test, store, lease_ms, false)
    }

    /// Spawns a worker process of the older release (`old`) or the current one.
    fn spawn_release(test: &str, store: &str, lease_ms: u64, old: bool) -> Self {
        let mut command = Command::new(std::env::current_exe().expect("the test binary"));
        if old {
            command.env(OLD_RELEASE_ENV, "1");
        }
        let mut child = command
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(STORE_ENV, store)
            .env(LEASE_ENV, lease_ms.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn a worker process");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        let (span_tx, spans) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // The test harness may have printed `test … ... ` on the same line first.
                if let Some((_, span)) = line.rsplit_once("span ") {
                    if let Some((start, end)) = span.trim().split_once(' ') {
                        if let (Ok(start), Ok(end)) = (start.parse(), end.parse()) {
                            let _ = span_tx.send((start, end));
                        }
                    }
                } else if let Some((_, id)) = line.rsplit_once("ran ") {
                    let _ = tx.send(id.trim().to_string());
                }
            }
        });
        Process {
            child,
            lines,
            spans,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (`TERM`, `STOP`, `CONT`…).
    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("kill(1)");
        assert!(status.success(), "could not signal the worker process");
    }

    /// SIGTERM, then the ids it ran.
    fn stop(self) -> Vec<String> {
        self.stop_with_spans().0
    }

    /// SIGTERM, then the ids it ran and the spans of its runs.
    fn stop_with_spans(mut self) -> (Vec<String>, Vec<(u128, u128)>) {
        self.signal("TERM");
        let exit = self.child.wait().expect("the worker process exits");
        assert!(exit.success(), "the worker process failed: {exit}");
        (self.lines.iter().collect(), self.spans.iter().collect())
    }
}

/// Enqueues `n` jobs of `ms` milliseconds each, numbered from 0, in batches of 500.
async fn enqueue_tallies(backend: &AnyBackend, n: u64, ms: u64) {
    for start in (0..n).step_by(500) {
        let batch = (start..(start + 500).min(n)).map(|n| Tally {
            n,
            stall: false,
            ms,
        });
        Tally::enqueue_many(backend, batch).await.expect("enqueue");
    }
}

/// Enqueues a job returning `n` whose first attempt never ends.
async fn enqueue_stalling(backend: &AnyBackend, n: u64) -> JobHandle<Tally> {
    let job = Tally {
        n,
        stall: true,
        ms: 0,
    };
    job.enqueue(backend).await.expect("enqueue")
}

/// The counts of the processes' queue.
async fn counts(backend: &AnyBackend) -> QueueCounts {
    backend
        .counts(CountsParams {
            queue: QUEUE.into(),
        })
        .await
        .expect("counts")
}

/// What a backend crate passes: an `async fn(String) -> impl Backend` connecting to the store
/// that a name selects.
pub trait Connect {
    /// Connects to the store `name` selects.
    fn connect(self, name: String) -> impl std::future::Future<Output = AnyBackend>;
}

impl<B, F, Fut> Connect for F
where
    B: Backend,
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = B>,
{
    async fn connect(self, name: String) -> AnyBackend {
        AnyBackend::new(self(name).await)
    }
}

/// Runs `check` in a runtime of its own with a fresh store: its name (for the worker
/// processes) and a backend on it.
fn on_fresh_store(connect: impl Connect, check: impl AsyncFnOnce(String, AnyBackend)) {
    let store = store_name();
    runtime().block_on(async {
        let backend = connect.connect(store.clone()).await;
        check(store, backend).await;
    });
}

fn store_name() -> String {
    format!(
        "conformance_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

/// Four worker processes drain 10,000 jobs: every job completes, and runs exactly once.
pub fn exactly_once(connect: impl Connect, child_test: &str) {
    const N: u64 = 10_000;
    on_fresh_store(connect, async |store, backend| {
        let processes: Vec<Process> = (0..4)
            .map(|_| Process::spawn(child_test, &store, 5_000))
            .collect();
        enqueue_tallies(&backend, N, 0).await;
        let (within, every) = (Duration::from_secs(120), Duration::from_millis(20));
        poll_until("every job completed", within, every, || async {
            counts(&backend).await.completed == N
        })
        .await;
        let per_process: Vec<Vec<String>> = processes.into_iter().map(Process::stop).collect();
        let runs: Vec<&String> = per_process.iter().flatten().collect();
        let distinct: std::collections::HashSet<&String> = runs.iter().copied().collect();
        assert_eq!(
            (runs.len(), distinct.len()),
            (N as usize, N as usize),
            "a job ran twice or never"
        );
        let working = per_process.iter().filter(|ran| !ran.is_empty()).count();
        assert!(working >= 2, "only {working} of 4 processes ran jobs");
        let c = counts(&backend).await;
        assert_eq!((c.completed, c.pending, c.running, c.dead), (N, 0, 0, 0));
    });
}

/// A worker process killed with SIGKILL mid-job: once its lease lapses, another process runs
/// the job to completion.
pub fn killed_worker_job_runs_again(connect: impl Connect, child_test: &str) {
    on_fresh_store(connect, async |store, backend| {
        let handle = enqueue_stalling(&backend, 7).await;
        let mut first = Process::spawn(child_test, &store, 500);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let holder = loop {
            let record = handle.record(&backend).await.expect("record");
            if let (JobStatus::Running, Some(lease)) = (record.status, record.lease) {
                break lease.worker;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the first process never took the job"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert!(
            holder.starts_with(&format!("{}-", first.pid())),
            "held by {holder}"
        );
        first.child.kill().expect("SIGKILL");
        first.child.wait().expect("reap the killed process");

        let second = Process::spawn(child_test, &store, 500);
        assert_eq!(handle.wait(&backend).await.expect("the job completes"), 7);
        let ran = second.stop();
        assert_eq!(
            ran,
            vec![handle.id().to_string()],
            "the second process ran it"
        );
        let done = handle.record(&backend).await.expect("record");
        assert_eq!((done.status, done.attempt), (JobStatus::Completed, 2));
        let lost = &done.errors[0];
        assert_eq!(
            (lost.attempt, lost.kind, lost.message.as_str()),
            (
                1,
                ErrorKind::LeaseLost,
                ErrorReport::lease_expired().message.as_str()
            ),
            "{:?}",
            done.errors
        );
    });
}

/// Experiment K: two worker processes (concurrency 16, 5 s leases) drain 2,000 jobs of 50 ms,
/// and one is killed with SIGKILL mid-run. Every job it had claimed (prefetched ones too) runs
/// again in the other within a second or so, long before the leases lapse, since the other
/// sees the process gone; no job is lost. Prints the figures: jobs claimed, lost, run twice,
/// and the seconds until every claimed job ran again.
pub fn killed_worker_jobs_run_again_at_once(connect: impl Connect, child_test: &str) {
    const N: u64 = 2_000;
    on_fresh_store(connect, async |store, backend| {
        let doomed = Process::spawn(child_test, &store, 5_000);
        let survivor = Process::spawn(child_test, &store, 5_000);
        // A worker judges others only once its own liveness has stood for a while.
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        enqueue_tallies(&backend, N, 50).await;
        let (within, every) = (Duration::from_secs(120), Duration::from_millis(5));
        poll_until("a third of the jobs ran", within, every, || async {
            counts(&backend).await.completed >= N / 3
        })
        .await;
        let mut doomed = doomed;
        doomed.child.kill().expect("SIGKILL");
        let killed_at = std::time::Instant::now();
        doomed.child.wait().expect("reap the killed process");
        let prefix = format!("{}-", doomed.pid());
        let running = backend
            .list(ListParams {
                filter: JobFilter::new().queue(QUEUE).status(JobStatus::Running),
                after: None,
                limit: 1_000,
            })
            .await
            .expect("list");
        let claimed: Vec<JobId> = running
            .iter()
            .filter(|j| {
                j.lease
                    .as_ref()
                    .is_some_and(|l| l.worker.starts_with(&prefix))
            })
            .map(|j| j.id)
            .collect();
        assert!(!claimed.is_empty(), "the killed process held jobs");
        poll_until("every claimed job ran again", within, every, || async {
            for &id in &claimed {
                let record = backend.read(ReadParams { id }).await.expect("read");
                if record.is_none_or(|r| r.status != JobStatus::Completed) {
                    return false;
                }
            }
            true
        })
        .await;
        let recovered = killed_at.elapsed();
        poll_until("every job completed", within, every, || async {
            counts(&backend).await.completed == N
        })
        .await;
        let ran_doomed: Vec<String> = doomed.lines.try_iter().collect();
        let ran_survivor = survivor.stop();
        let mut runs: std::collections::HashMap<&String, u32> = Default::default();
        for id in ran_doomed.iter().chain(&ran_survivor) {
            *runs.entry(id).or_default() += 1;
        }
        let twice = runs.values().filter(|&&n| n > 1).count();
        let c = counts(&backend).await;
        let lost = N - c.completed;
        eprintln!(
            "experiment K: {} claimed by the killed process; lost {lost}, ran twice {twice}, \
             every claimed job ran again within {:.2} s",
            claimed.len(),
            recovered.as_secs_f64()
        );
        assert_eq!((lost, c.dead, c.running, c.pending), (0, 0, 0, 0));
        assert_eq!(runs.len(), N as usize, "every job ran");
        assert!(
            recovered < Duration::from_secs(3),
            "the claimed jobs waited {recovered:?}: the death went unseen (leases last 5 s)"
        );
    });
}

/// A stopped (SIGSTOP) worker process keeps its connections, so it is not taken for dead: its
/// job is rescued only when the lease lapses, recorded as such, and runs once elsewhere; resumed,
/// the stopped process carries on and stops cleanly.
pub fn stopped_worker_is_fenced_not_taken_for_dead(connect: impl Connect, child_test: &str) {
    on_fresh_store(connect, async |store, backend| {
        let handle = enqueue_stalling(&backend, 9).await;
        let stopped = Process::spawn(child_test, &store, 1_000);
        poll_until(
            "the first process runs the job",
            Duration::from_secs(30),
            Duration::from_millis(10),
            || async {
                let record = handle.record(&backend).await.expect("record");
                record.status == JobStatus::Running
            },
        )
        .await;
        let other = Process::spawn(child_test, &store, 1_000);
        // Long enough for the other process to judge workers gone, were the stopped one gone.
        tokio::time::sleep(Duration::from_millis(3_000)).await;
        stopped.signal("STOP");
        assert_eq!(handle.wait(&backend).await.expect("the job completes"), 9);
        let done = handle.record(&backend).await.expect("record");
        assert_eq!((done.status, done.attempt), (JobStatus::Completed, 2));
        assert_eq!(
            done.errors[0].message,
            ErrorReport::lease_expired().message,
            "rescued for its lapsed lease, not as a dead worker"
        );
        stopped.signal("CONT");
        let ran_stopped = stopped.stop();
        let ran_other = other.stop();
        assert_eq!(
            (ran_stopped, ran_other),
            (Vec::new(), vec![handle.id().to_string()]),
            "the job ran once, in the other process"
        );
    });
}

/// A paused queue starts nothing in any of four worker processes, and once resumed its jobs
/// all run, each exactly once.
pub fn paused_queue_starts_nothing_across_processes(connect: impl Connect, child_test: &str) {
    const N: u64 = 400;
    on_fresh_store(connect, async |store, backend| {
        backend.pause_queue(QUEUE).await.expect("pause");
        let processes: Vec<Process> = (0..4)
            .map(|_| Process::spawn(child_test, &store, 5_000))
            .collect();
        enqueue_tallies(&backend, N, 0).await;
        // Longer than a worker takes to start and to read the paused queues twice.
        tokio::time::sleep(Duration::from_millis(2_000)).await;
        let c = counts(&backend).await;
        assert_eq!(
            (c.pending, c.running, c.completed),
            (N, 0, 0),
            "a paused queue started a job"
        );
        backend.resume_queue(QUEUE).await.expect("resume");
        let (within, every) = (Duration::from_secs(60), Duration::from_millis(20));
        poll_until(
            "every job completed once resumed",
            within,
            every,
            || async { counts(&backend).await.completed == N },
        )
        .await;
        let runs: Vec<String> = processes.into_iter().flat_map(Process::stop).collect();
        let distinct: std::collections::HashSet<&String> = runs.iter().collect();
        assert_eq!((runs.len(), distinct.len()), (N as usize, N as usize));
    });
}

/// A rolling deploy: a worker process of the older release (which does not know [`Newer`])
/// runs its own jobs and leaves the newer ones waiting, listed as stranded, without spending
/// an attempt on them; once a process of the newer release starts, it runs every one of them
/// at attempt 1.
pub fn rolling_deploy(connect: impl Connect, child_test: &str) {
    const N: u64 = 100;
    on_fresh_store(connect, async |store, backend| {
        let old = Process::spawn_release(child_test, &store, 5_000, true);
        // The newer jobs first, so the old worker meets them at the head of the queue.
        let newer = Newer::enqueue_many(&backend, (0..N).map(|n| Newer { n }))
            .await
            .expect("enqueue");
        enqueue_tallies(&backend, N, 0).await;
        let (within, every) = (Duration::from_secs(60), Duration::from_millis(20));
        poll_until("the old worker ran its jobs", within, every, || async {
            counts(&backend).await.completed == N
        })
        .await;
        let stranded = backend.stranded().await.expect("stranded");
        assert_eq!(
            stranded
                .iter()
                .map(|s| (s.queue.as_str(), s.name.as_str(), s.jobs, s.oldest))
                .collect::<Vec<_>>(),
            vec![(QUEUE, Newer::NAME, N, newer[0].id())],
            "the newer jobs are stranded while only the old release runs"
        );

        let new = Process::spawn_release(child_test, &store, 5_000, false);
        poll_until(
            "the new worker ran the newer jobs",
            within,
            every,
            || async { counts(&backend).await.completed == 2 * N },
        )
        .await;
        let ran_old = old.stop();
        let ran_new = new.stop();
        for handle in &newer {
            let id = handle.id().to_string();
            assert!(!ran_old.contains(&id), "the old release ran {id}");
            assert!(ran_new.contains(&id), "the new release did not run {id}");
            let r = handle.record(&backend).await.expect("record");
            assert_eq!(
                (r.status, r.attempt, r.errors.len()),
                (JobStatus::Completed, 1, 0),
                "{id} ran on its first attempt"
            );
        }
        assert!(backend.stranded().await.expect("stranded").is_empty());
    });
}

/// Expands to the process checks (plus the hidden child test they re-execute), each on the
/// store that `$connect` (a path to an `async fn(String) -> impl Backend`) selects by name.
/// Invoke it inside a module of its own.
#[macro_export]
macro_rules! conformance_processes {
    ($connect:path) => {
        $crate::conformance_processes_only!($connect;
            four_worker_processes_run_each_job_exactly_once: exactly_once,
            a_killed_worker_process_job_runs_again_elsewhere: killed_worker_job_runs_again,
            a_killed_worker_process_jobs_run_again_at_once: killed_worker_jobs_run_again_at_once,
            a_stopped_worker_process_is_fenced_not_taken_for_dead:
                stopped_worker_is_fenced_not_taken_for_dead,
            a_paused_queue_starts_nothing_across_processes:
                paused_queue_starts_nothing_across_processes,
            flow_limits_hold_across_four_processes: flow_limits_hold_across_processes,
            a_rolling_deploy_leaves_new_jobs_to_new_workers: rolling_deploy,
        );
    };
}

/// Expands to the process checks it names, each a `#[test]` named before its check (a function
/// of [`processes`](crate::testing::processes)), as [`conformance_processes!`] does for all of
/// them: for a backend being built, whose checks are listed as it comes to pass them.
///
/// ```ignore
/// mod streams_processes {
///     jobs_core::conformance_processes_only!(crate::support::streams_store_backend;
///         four_worker_processes_run_each_job_exactly_once: exactly_once,
///     );
/// }
/// ```
#[macro_export]
macro_rules! conformance_processes_only {
    ($connect:path; $($test:ident: $check:ident),* $(,)?) => {
        /// Not a check: the worker process the checks below start (idle when run directly).
        #[test]
        fn worker_process() {
            $crate::testing::processes::child($connect);
        }

        $(
            #[test]
            fn $test() {
                let child = $crate::testing::processes::sibling(module_path!(), "worker_process");
                $crate::testing::processes::$check($connect, &child);
            }
        )*
    };
}
