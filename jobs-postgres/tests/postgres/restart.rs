//! A private PostgreSQL (default `fsync` and `synchronous_commit`) stopped with
//! `pg_ctl stop -m immediate` and started again in the middle of a run: no acknowledged enqueue
//! is lost, and the same worker resumes by itself.

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jobs_core::{
    Backend, Job, JobContext, JobError, JobExt, JobId, JobOptions, JobStatus, ReadParams, StateMap,
    Worker,
};
use jobs_postgres::PgBackend;
use serde::{Deserialize, Serialize};

/// How many enqueues the producer gets acknowledged.
const JOBS: usize = 1_500;

/// How many acknowledged enqueues come before the kill.
const KILL_AFTER: usize = 400;

/// The worker's slots, and how many jobs it leases beyond them: fewer than the producer's pace,
/// so a backlog, leased and waiting, is there at the kill.
const CONCURRENCY: usize = 4;

/// A PostgreSQL server of its own on a free loopback port, in a directory of its own under
/// `/tmp`, stopped (`-m immediate`) and removed when dropped. Run as the `postgres` user when
/// this process is root (initdb and postgres refuse root).
struct PgServer {
    port: u16,
    root: PathBuf,
    as_postgres: bool,
}

impl PgServer {
    /// Runs initdb in a new directory and starts the server on a free port.
    fn start() -> Self {
        let port = {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
            listener.local_addr().expect("an address").port()
        };
        let root =
            std::env::temp_dir().join(format!("jobs-pg-restart-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("a scratch directory");
        let as_postgres = is_root();
        let server = PgServer {
            port,
            root,
            as_postgres,
        };
        if as_postgres {
            run(Command::new("chown")
                .arg("-R")
                .arg("postgres")
                .arg(&server.root));
        }
        let mut initdb = server.command("/usr/local/bin/initdb");
        initdb
            .arg("-D")
            .arg(server.data())
            .args(["-U", "postgres", "--auth=trust", "-N"]);
        run(&mut initdb);
        server.pg_ctl_start();
        server
    }

    /// Its URL (the `postgres` database, the default schema).
    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn data(&self) -> PathBuf {
        self.root.join("data")
    }

    /// `bin`, through `runuser -u postgres` when this process is root.
    fn command(&self, bin: &str) -> Command {
        let mut command = if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--", bin]);
            command
        } else {
            Command::new(bin)
        };
        command.stdin(Stdio::null());
        command
    }

    fn pg_ctl_start(&self) {
        let mut start = self.command("/usr/local/bin/pg_ctl");
        start
            .arg("-D")
            .arg(self.data())
            .arg("-o")
            .arg(format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1",
                self.port,
                self.root.display()
            ))
            .arg("-l")
            .arg(self.root.join("log"))
            .args(["-w", "start"]);
        run(&mut start);
    }

    /// `pg_ctl stop -m immediate`: the server processes quit at once, without a checkpoint,
    /// as in a crash; the next start recovers from the WAL.
    fn stop_immediately(&self) -> std::io::Result<std::process::Output> {
        self.command("/usr/local/bin/pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .output()
    }

    /// Stops the server with `-m immediate` and starts it again on the same port and data;
    /// returns when the stop was done.
    fn restart(&self) -> Instant {
        let stopped = self.stop_immediately().expect("pg_ctl runs");
        assert!(stopped.status.success(), "pg_ctl stop: {stopped:?}");
        let down = Instant::now();
        self.pg_ctl_start();
        down
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = self.stop_immediately();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Whether this process runs as root.
fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().expect("id runs");
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// Runs `command`, failing with its output unless it succeeds.
fn run(command: &mut Command) {
    let out = command.output().expect("the command runs");
    assert!(
        out.status.success(),
        "{command:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The handler runs of each payload number, and when the first began.
#[derive(Default)]
struct Runs(Mutex<HashMap<u64, (u32, Instant)>>);

impl Runs {
    /// Counts a run of payload number `n`.
    fn record(&self, n: u64) {
        let mut runs = self.0.lock().unwrap();
        runs.entry(n).or_insert((0, Instant::now())).0 += 1;
    }
}

/// A job that counts its runs in [`Runs`].
#[derive(Serialize, Deserialize)]
struct Counted {
    n: u64,
}

impl Job for Counted {
    const NAME: &'static str = "pg-test.restart-counted";
    type Output = ();
    fn options() -> JobOptions {
        JobOptions {
            queue: "restart-durable".into(),
            ..Default::default()
        }
    }
    async fn run(self, _ctx: JobContext, state: StateMap) -> Result<(), JobError> {
        let runs = state.require::<Runs>()?;
        runs.record(self.n);
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(())
    }
}

/// The acknowledged enqueues: payload number and job id, in order.
type Acked = Arc<Mutex<Vec<(u64, JobId)>>>;

/// Enqueues until [`JOBS`] were acknowledged, each attempt with a new payload number; an
/// attempt that fails (the server is away) was not acknowledged and is retried after a pause.
async fn produce(backend: PgBackend, acked: Acked) -> usize {
    let mut failed = 0;
    let mut n = 0;
    while acked.lock().unwrap().len() < JOBS {
        match (Counted { n }).enqueue(&backend).await {
            Ok(handle) => acked.lock().unwrap().push((n, handle.id())),
            Err(_) => {
                failed += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        n += 1;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    failed
}

/// An immediate stop and restart of the server under a producer and a worker: every
/// acknowledged job is stored and completes, each ran at least once, and the worker, not
/// restarted itself, picks up jobs enqueued after the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_acknowledged_is_lost_when_postgres_crashes() {
    let server = tokio::task::block_in_place(PgServer::start);
    let backend = PgBackend::connect(&server.url())
        .await
        .expect("the private server");
    let runs = Arc::new(Runs::default());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = Worker::new(backend.clone())
        .register::<Counted>()
        .cron(false)
        .concurrency(CONCURRENCY)
        .prefetch(CONCURRENCY)
        .poll_interval(Duration::from_millis(100))
        .state_arc(runs.clone());
    let running = tokio::spawn(worker.run_until(async {
        let _ = stopped.await;
    }));
    let acked: Acked = Arc::default();
    let producer = tokio::spawn(produce(backend.clone(), acked.clone()));

    let deadline = Instant::now() + Duration::from_secs(20);
    while acked.lock().unwrap().len() < KILL_AFTER || runs.0.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the run never got going");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let acked_before = acked.lock().unwrap().len();
    let ran_before = runs.0.lock().unwrap().len();
    let killed = Instant::now();
    let down = tokio::task::block_in_place(|| server.restart());
    let back = Instant::now();
    eprintln!(
        "killed after {acked_before} acknowledged, {ran_before} run; stopped in {:?}, \
         down for {:?}",
        down - killed,
        back - down
    );

    let failed = tokio::time::timeout(Duration::from_secs(30), producer)
        .await
        .expect("the producer finished")
        .unwrap();
    let acked = acked.lock().unwrap().clone();
    assert_eq!(acked.len(), JOBS);

    // The server is back: an acknowledged job it does not have is lost, one it has completes.
    let mut pending: Vec<(u64, JobId)> = acked.clone();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut still = Vec::new();
        let mut lost = Vec::new();
        for &(n, id) in &pending {
            match backend.read(ReadParams { id }).await {
                Ok(Some(job)) if job.status == JobStatus::Completed => {}
                Ok(Some(_)) | Err(_) => still.push((n, id)),
                Ok(None) => lost.push(n),
            }
        }
        assert!(
            lost.is_empty(),
            "{} acknowledged jobs are not stored, payload numbers {:?}",
            lost.len(),
            &lost[..lost.len().min(20)]
        );
        pending = still;
        if pending.is_empty() {
            break;
        }
        if running.is_finished() {
            panic!("the worker stopped by itself: {:?}", running.await);
        }
        assert!(
            Instant::now() < deadline,
            "{} acknowledged jobs not completed within 60 s, e.g. {:?}",
            pending.len(),
            &pending[..pending.len().min(5)]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let all_done = Instant::now();

    let runs = runs.0.lock().unwrap().clone();
    let never: Vec<u64> = acked
        .iter()
        .map(|&(n, _)| n)
        .filter(|n| !runs.contains_key(n))
        .collect();
    assert!(never.is_empty(), "completed but never run: {never:?}");
    let twice = runs.values().filter(|(count, _)| *count > 1).count();
    // At the kill the worker held at most `CONCURRENCY` jobs running and as many prefetched;
    // those prefetched may start without the server, any start after them needed a fetch from
    // the restarted server.
    let mut starts: Vec<Instant> = runs
        .values()
        .map(|&(_, first)| first)
        .filter(|&first| first >= down)
        .collect();
    starts.sort();
    let resumed = *starts
        .get(CONCURRENCY)
        .expect("jobs fetched after the restart ran");
    eprintln!(
        "{JOBS} acknowledged ({failed} enqueues failed while down), all completed; \
         {twice} ran more than once; the first job fetched after the restart started {:?} \
         after the server was back; all done {:?} after it",
        resumed.saturating_duration_since(back),
        all_done - back
    );

    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    drop(server);
}
