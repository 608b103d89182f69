//! A server crash in the middle of a run: a producer enqueues and a worker runs while the
//! backend's server is killed and started again. Checks that no acknowledged enqueue is lost
//! (each is stored and completes, and ran at least once) and that the same worker, not
//! restarted itself, resumes by itself with jobs fetched from the restarted server.
//!
//! Each backend crate starts a durable server of its own and passes how to crash it; the
//! caller's test must run on a multi-thread runtime, since the crash blocks through
//! [`tokio::task::block_in_place`]:
//!
//! ```ignore
//! #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn nothing_acknowledged_is_lost_when_the_server_crashes() {
//!     let server = MyServer::start();
//!     let backend = MyBackend::connect(&server.url()).await.unwrap();
//!     use jobs_core::testing::restart::{nothing_acknowledged_is_lost, Restarted};
//!     nothing_acknowledged_is_lost(backend, move || {
//!         let down = Instant::now();
//!         Restarted { server: server.restart(), down }
//!     })
//!     .await;
//! }
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::{
    Backend, Job, JobContext, JobError, JobExt, JobId, JobOptions, JobStatus, ReadParams, StateMap,
    Worker,
};

/// How many enqueues the producer gets acknowledged.
const JOBS: usize = 1_500;

/// How many acknowledged enqueues come before the kill.
const KILL_AFTER: usize = 400;

/// The worker's slots, and how many jobs it leases beyond them: fewer than the producer's pace,
/// so a backlog, leased and waiting, is there at the kill.
const CONCURRENCY: usize = 4;

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

/// A job that counts its runs in [`Runs`], then works 20 ms.
#[derive(Serialize, Deserialize)]
struct Counted {
    /// The payload number, new for each enqueue attempt.
    n: u64,
}

impl Job for Counted {
    const NAME: &'static str = "conformance.restart_counted";
    type Output = ();
    fn options() -> JobOptions {
        JobOptions {
            queue: "conformance-restart".into(),
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
/// Returns how many attempts failed.
async fn produce<B: Backend>(backend: B, acked: Acked) -> usize {
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

/// What the crash of [`nothing_acknowledged_is_lost`] hands back.
pub struct Restarted<G> {
    /// The restarted server (or whatever keeps it up), dropped at the end of the scenario.
    pub server: G,
    /// When the server was down: at once for a SIGKILL, when the stop returned otherwise. Jobs
    /// first started after it, beyond those the worker had leased before, came from the
    /// restarted server.
    pub down: Instant,
}

/// Crashes the server under a producer and a worker, once 400 of its 1,500 enqueues were
/// acknowledged and jobs run: every acknowledged job is stored and completes within 60 s, each
/// ran at least once, and the worker, not restarted itself, runs jobs fetched after the restart.
///
/// `crash` kills the server and starts it again, blocking until it answers; it is called
/// through [`tokio::task::block_in_place`], so the caller's test must run on a multi-thread
/// runtime. `backend` is connected to that server and must reconnect by itself.
pub async fn nothing_acknowledged_is_lost<B, G>(backend: B, crash: impl FnOnce() -> Restarted<G>)
where
    B: Backend + Clone,
{
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
    let Restarted { server, down } = tokio::task::block_in_place(crash);
    let back = Instant::now();
    eprintln!(
        "killed after {acked_before} acknowledged, {ran_before} run; stopped in {:?}, \
         down for {:?}",
        down.saturating_duration_since(killed),
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
