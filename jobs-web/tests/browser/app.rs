//! What the browser looks at: a store, a worker running a job that fails while an outage lasts,
//! and one HTTP server with the dashboard nested under [`FULL`] and, read-only, under
//! [`READ_ONLY`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use jobs_core::{Error, JobError, JobExt, JobId, JobState, Operations, QueueCounts, Worker};
use jobs_macros::job;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::chrome::DEADLINE;
use crate::store::{Kind, Store};

/// Where the full dashboard is nested.
pub(crate) const FULL: &str = "/ops/jobs";
/// Where the read-only dashboard is nested.
pub(crate) const READ_ONLY: &str = "/view/jobs";
/// The queue of the test's jobs.
pub(crate) const QUEUE: &str = "mail";
/// What a delivery fails with during the outage: it must show as text, never run.
pub(crate) const ERROR: &str = "<script>alert(1)</script>";

/// How deliveries go: they fail, they wait, or they succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Every delivery fails with [`ERROR`].
    Failing,
    /// Deliveries wait (running) until the phase is `Working`.
    Held,
    /// Deliveries succeed.
    Working,
}

/// The worker's state: the phase, set by the test.
pub(crate) struct Outage {
    phase: watch::Sender<Phase>,
}

impl Outage {
    /// Sets the phase deliveries see from now on (a held one goes on once `Working`).
    pub(crate) fn set(&self, phase: Phase) {
        self.phase.send_replace(phase);
    }
}

/// Delivers a mail: fails while the outage is on, twice, then it is dead.
#[job(
    crate = "jobs_core",
    queue = "mail",
    name = "mail.deliver",
    attempts = 2,
    backoff = "fixed(100ms)"
)]
async fn deliver(to: String, outage: JobState<Outage>) -> Result<String, JobError> {
    let mut phase = outage.phase.subscribe();
    if *phase.borrow_and_update() == Phase::Failing {
        return Err(JobError::retryable(ERROR));
    }
    let _ = phase.wait_for(|&p| p == Phase::Working).await;
    Ok(format!("delivered to {to}"))
}

/// A nightly digest: only its schedule matters here (the worker records it).
#[job(
    crate = "jobs_core",
    queue = "mail",
    name = "mail.digest",
    cron = "0 3 * * *",
    tz = "Europe/Paris"
)]
async fn digest() {}

/// The running dashboard, worker and store of one test.
pub(crate) struct App {
    pub(crate) store: Store,
    /// `http://127.0.0.1:PORT`.
    pub(crate) origin: String,
    pub(crate) outage: Arc<Outage>,
    /// The worker's id (its row on the workers page).
    pub(crate) worker_id: String,
    stop_worker: oneshot::Sender<()>,
    worker: JoinHandle<Result<(), Error>>,
    server: JoinHandle<()>,
}

impl App {
    /// A fresh store of `kind`, its worker (deliveries failing) and the dashboards served.
    pub(crate) async fn start(kind: Kind) -> Self {
        let store = Store::fresh(kind).await;
        let backend = store.backend.clone();
        let outage = Arc::new(Outage {
            phase: watch::Sender::new(Phase::Failing),
        });
        let worker_id = format!("browser-{}", kind.name());
        let (stop_worker, stopped) = oneshot::channel::<()>();
        let worker = tokio::spawn(
            Worker::new(backend.clone())
                .queues([QUEUE])
                .id(worker_id.clone())
                .concurrency(4)
                .poll_interval(Duration::from_millis(100))
                .state_arc(outage.clone())
                .run_until(async {
                    let _ = stopped.await;
                }),
        );
        let app = Router::new()
            .nest(FULL, jobs_web::router(backend.clone()))
            .nest(
                READ_ONLY,
                jobs_web::Dashboard::new(backend).read_only(true).router(),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let origin = format!("http://{}", listener.local_addr().expect("its address"));
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("the server runs");
        });
        App {
            store,
            origin,
            outage,
            worker_id,
            stop_worker,
            worker,
            server,
        }
    }

    /// Enqueues a delivery to `to` tagged `tag`.
    pub(crate) async fn deliver(&self, to: &str, tag: &str) -> JobId {
        Deliver::new(to.into())
            .tag(tag)
            .enqueue(&self.store.backend)
            .await
            .expect("enqueue")
            .id()
    }

    /// The counts of [`QUEUE`] as stored.
    pub(crate) async fn counts(&self) -> QueueCounts {
        let queues = self.store.backend.queues().await.expect("the queues");
        queues
            .into_iter()
            .find(|q| q.name == QUEUE)
            .map(|q| q.counts)
            .unwrap_or_default()
    }

    /// Waits until the stored counts of [`QUEUE`] satisfy `ok`.
    pub(crate) async fn wait_counts(&self, what: &str, ok: impl Fn(&QueueCounts) -> bool) {
        let until = Instant::now() + DEADLINE;
        loop {
            let counts = self.counts().await;
            if ok(&counts) {
                return;
            }
            assert!(
                Instant::now() < until,
                "not {what} after {DEADLINE:?}: {counts:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops the worker and the server and removes the store's data.
    pub(crate) async fn stop(self) {
        self.outage.set(Phase::Working);
        let _ = self.stop_worker.send(());
        tokio::time::timeout(DEADLINE, self.worker)
            .await
            .expect("the worker stops")
            .expect("the worker's task")
            .expect("the worker ran");
        self.server.abort();
        self.store.remove().await;
    }
}
