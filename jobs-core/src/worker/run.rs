//! The worker's main loop: start-up checks, the fetch loop, and graceful shutdown.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::any::AnyBackend;
use crate::backend::{Backend, FetchParams, Release, ReleaseParams, SubscribeParams};
use crate::clock::Clock;
use crate::context::JobContext;
use crate::cron::Schedule;
use crate::model::Timestamp;
use crate::registry::{self, JobType};
use crate::state::StateMap;
use crate::wake::Wakeup;
use crate::error::StartProblem;
use crate::Error;

use super::config::Worker;
use super::events::Hooks;
use super::gate::RunGate;
use super::leases::{keep_alive, Leases};
use super::reporter::{flush_loop, Done};
use super::{cron, execute, maintenance};

/// The most jobs one fetch asks for.
const MAX_FETCH: usize = 256;

/// What every task of a running worker shares.
pub(crate) struct Shared {
    pub backend: AnyBackend,
    pub types: HashMap<String, JobType>,
    pub state: StateMap,
    pub clock: Arc<dyn Clock>,
    pub hooks: Hooks,
    pub leases: Leases,
    /// Lets leased jobs start, `concurrency` at once, in priority order.
    pub gate: Arc<RunGate>,
    /// Shutdown began: fetch nothing more, hand back jobs that have not started.
    pub stopping: CancellationToken,
    /// The grace period ran out: stop running jobs and hand them back.
    pub hard_stop: CancellationToken,
    /// When retries this worker recorded become due, so it fetches them on time without polling.
    pub retries: Mutex<BinaryHeap<Reverse<Timestamp>>>,
    /// Wakes the idle fetch loop when a retry is scheduled.
    pub retry_scheduled: Notify,
}

impl Shared {
    /// Remembers that a job becomes due at `at`.
    pub fn retry_due(&self, at: Timestamp) {
        self.retries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Reverse(at));
        self.retry_scheduled.notify_one();
    }

    /// How long an idle fetch loop may sleep: the poll interval, or less if a retry is due sooner.
    fn idle_for(&self, poll: Duration) -> Duration {
        let now = self.clock.now();
        let mut retries = self.retries.lock().unwrap_or_else(|e| e.into_inner());
        while retries.peek().is_some_and(|Reverse(at)| *at <= now) {
            retries.pop();
        }
        match retries.peek() {
            Some(Reverse(at)) => (*at - now).to_std().unwrap_or_default().min(poll),
            None => poll,
        }
    }
}

pub(crate) async fn run(
    worker: Worker,
    signal: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    let (types, mut problems) = registry::index(
        registry::registered()
            .into_iter()
            .chain(worker.extra_types.iter().copied()),
    );
    let queues = choose_queues(&worker, &types);
    if queues.is_empty() {
        problems.push(StartProblem::NoQueues);
    }
    let served: Vec<&JobType> = types
        .values()
        .filter(|t| queues.contains(&t.options().queue))
        .collect();
    problems.extend(missing_state(&served, &worker.state));
    let (schedules, bad_schedules) = parse_schedules(&served);
    problems.extend(bad_schedules);
    if !problems.is_empty() {
        return Err(Error::Start(problems));
    }
    let wakeup = worker
        .backend
        .subscribe(SubscribeParams {
            queues: queues.clone(),
        })
        .await?;

    let shared = Arc::new(Shared {
        backend: worker.backend.clone(),
        types,
        state: worker.state.clone(),
        clock: worker.clock.clone(),
        hooks: worker.hooks.clone(),
        leases: Leases::default(),
        gate: RunGate::new(worker.concurrency),
        stopping: CancellationToken::new(),
        hard_stop: CancellationToken::new(),
        retries: Mutex::new(BinaryHeap::new()),
        retry_scheduled: Notify::new(),
    });
    tracing::info!(worker = %worker.id, ?queues, concurrency = worker.concurrency, "worker started");

    let background_stop = CancellationToken::new();
    let mut background = JoinSet::new();
    background.spawn(keep_alive(
        shared.clone(),
        worker.lease_for,
        background_stop.clone(),
    ));
    let retention = queues
        .iter()
        .map(|q| {
            let policy = worker
                .retention
                .get(q)
                .copied()
                .unwrap_or(worker.default_retention);
            (q.clone(), policy)
        })
        .collect();
    background.spawn(maintenance::maintain(
        shared.clone(),
        retention,
        worker.rescue_interval,
        worker.prune_interval,
        background_stop.clone(),
    ));
    if worker.cron {
        for (job, schedule) in schedules {
            background.spawn(cron::schedule_ticks(
                shared.clone(),
                job,
                schedule,
                background_stop.clone(),
            ));
        }
    }
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    let reporter = tokio::spawn(flush_loop(shared.clone(), done_rx));

    let mut jobs = JoinSet::new();
    let fetching = fetch_loop(&shared, &worker, &queues, &wakeup, &mut jobs, &done_tx);
    tokio::select! {
        _ = signal => {}
        _ = fetching => {}
    }

    // Graceful shutdown.
    tracing::info!(worker = %worker.id, running = jobs.len(), "worker stopping");
    shared.stopping.cancel();
    let drained = tokio::time::timeout(worker.grace, async {
        while jobs.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            jobs = jobs.len(),
            "grace period over: handing running jobs back"
        );
        shared.hard_stop.cancel();
        while jobs.join_next().await.is_some() {}
    }
    drop(done_tx);
    let _ = reporter.await;
    let leftover = shared.leases.snapshot();
    if !leftover.is_empty() {
        let now = shared.clock.now();
        if let Err(e) = shared
            .backend
            .release(ReleaseParams {
                items: leftover
                    .into_iter()
                    .map(|lease| Release {
                        lease,
                        run_at: None,
                    })
                    .collect(),
                now,
            })
            .await
        {
            tracing::warn!(error = %e, "could not hand jobs back; their leases will lapse");
        }
    }
    background_stop.cancel();
    while background.join_next().await.is_some() {}
    tracing::info!(worker = %worker.id, "worker stopped");
    Ok(())
}

/// Leases jobs while there are free slots, sleeping on the backend's wake-up when idle.
async fn fetch_loop(
    shared: &Arc<Shared>,
    worker: &Worker,
    queues: &[String],
    wakeup: &Wakeup,
    jobs: &mut JoinSet<()>,
    done: &mpsc::UnboundedSender<Done>,
) {
    let prefetch = worker.prefetch.unwrap_or(worker.concurrency);
    let slots = Arc::new(Semaphore::new(worker.concurrency + prefetch));
    // While prefetched jobs keep the handlers busy, wait for half the prefetch to free up, so
    // fetches come in batches rather than one per finished job.
    let batch = (prefetch / 2).max(1);
    let mut pause = Duration::from_millis(50);
    loop {
        while jobs.try_join_next().is_some() {}
        let permits = take_slots(&slots, batch).await;
        let params = FetchParams {
            queues: queues.to_vec(),
            limit: permits.len(),
            worker: worker.id.clone(),
            lease_for: worker.lease_for,
            now: shared.clock.now(),
        };
        match shared.backend.fetch(params).await {
            Ok(leased) if leased.is_empty() => {
                drop(permits);
                tokio::select! {
                    _ = wakeup.wait() => {}
                    _ = shared.retry_scheduled.notified() => {}
                    _ = tokio::time::sleep(shared.idle_for(worker.poll_interval)) => {}
                }
            }
            Ok(leased) => {
                pause = Duration::from_millis(50);
                let turns = shared.gate.admit(leased.iter().map(|j| &j.record));
                for ((job, slot), turn) in leased.into_iter().zip(permits).zip(turns) {
                    let ctx = JobContext::new(shared.backend.clone(), &job);
                    shared.leases.insert(ctx.clone());
                    let run = execute::execute(shared.clone(), job, ctx, slot, turn, done.clone());
                    jobs.spawn(run);
                }
            }
            Err(e) => {
                drop(permits);
                tracing::warn!(error = %e, retry_in_ms = pause.as_millis() as u64, "fetch failed");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// Waits for `at_least` free slots, then takes every other free one (up to a fetch's worth).
async fn take_slots(slots: &Arc<Semaphore>, at_least: usize) -> Vec<OwnedSemaphorePermit> {
    let mut permits = Vec::with_capacity(at_least);
    while permits.len() < at_least {
        permits.push(slots.clone().acquire_owned().await.expect("never closed"));
    }
    while permits.len() < MAX_FETCH {
        match slots.clone().try_acquire_owned() {
            Ok(permit) => permits.push(permit),
            Err(_) => break,
        }
    }
    permits
}

/// The queues named with `.queues(..)`, or else those of every registered job.
fn choose_queues(worker: &Worker, types: &HashMap<String, JobType>) -> Vec<String> {
    if !worker.queues.is_empty() {
        return worker.queues.clone();
    }
    let queues: BTreeSet<String> = types.values().map(|t| t.options().queue).collect();
    queues.into_iter().collect()
}

/// Each `State<T>` a served job takes that the worker was not given.
fn missing_state(types: &[&JobType], state: &StateMap) -> Vec<StartProblem> {
    types
        .iter()
        .flat_map(|t| {
            t.required_state()
                .into_iter()
                .filter(|key| !state.contains(key))
                .map(move |key| StartProblem::MissingState {
                    job: t.name.to_string(),
                    type_name: key.type_name.to_string(),
                })
        })
        .collect()
}

/// The served jobs' schedules, and a problem for each that does not parse.
fn parse_schedules(types: &[&JobType]) -> (Vec<(JobType, Schedule)>, Vec<StartProblem>) {
    let mut schedules = Vec::new();
    let mut problems = Vec::new();
    for t in types {
        let Some(spec) = t.cron() else { continue };
        match Schedule::from_spec(&spec) {
            Ok(schedule) => schedules.push((**t, schedule)),
            Err(e) => problems.push(StartProblem::BadSchedule {
                job: t.name.to_string(),
                reason: e.to_string(),
            }),
        }
    }
    (schedules, problems)
}
