//! Running a worker: start-up, the background tasks, the fetch loop, and graceful shutdown.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::backend::{
    Backend, EndDeliveriesParams, FetchParams, HoldParams, LeaseRef, SubscribeParams,
};
use crate::catalog::KnownJob;
use crate::context::{BackendContext as _, JobContext};
use crate::event::{EventKind, JobEvent};
use crate::flow::QueueFlow;
use crate::liveness::Liveness;
use crate::model::LeasedJob;
use crate::wake::Wakeup;
use crate::Error;

use super::config::Worker;
use super::execute::Runners;
use super::handoff::{Handed, Handoffs};
use super::heartbeat::Presence;
use super::leases::Leases;
use super::maintenance::Retention;
use super::metrics::WorkerMetrics;
use super::outcome::Sink;
use super::places::Places;
use super::queue_state::{watch_queue_state, QueueStates, FLOW_RETRY, FLOW_RETRY_MAX};
use super::rate::RatedStarts;
use super::renew::keep_alive;
use super::room::hold_off;
use super::run_queue::{Queued, RunQueue};
use super::shared::{Retries, Shared};
use super::start::{plan, Periodic};
use super::window::Window;
use super::{cron, maintenance, versions};

/// How long a starting worker waits for its liveness hold to stand before it takes jobs.
const FIRST_HOLD: Duration = Duration::from_secs(2);

impl Worker {
    /// Runs until the shutdown signal from ctrl-c or SIGTERM.
    pub async fn run(self) -> Result<(), Error> {
        self.run_until(super::shutdown_signal()).await
    }

    /// Runs until `signal` resolves, then shuts down gracefully: stops fetching, lets running jobs
    /// finish within the grace period and hands the rest back without spending an attempt.
    ///
    /// While it runs, the worker records itself in the store (see
    /// [`heartbeat_interval`](Worker::heartbeat_interval)) with the cron schedules it runs, and
    /// removes itself when it stops.
    ///
    /// Fails at start with [`Error::Start`], listing every problem found: two job types share a
    /// stored name, a handler's `State<T>` is missing, a cron schedule does not parse.
    pub async fn run_until(self, signal: impl Future<Output = ()> + Send) -> Result<(), Error> {
        let plan = plan(&self)?;
        versions::check_stored_versions(&self.backend, &plan.types).await?;
        let wakeup = self
            .backend
            .subscribe(SubscribeParams {
                queues: plan.queues.clone(),
                worker: Some(self.id.clone()),
            })
            .await?;
        let liveness = Arc::new(self.hold_liveness().await);
        let mut presence = Presence::of(&self, &plan, self.clock.now());
        let metrics = WorkerMetrics::new(&plan.queues, plan.types.keys());
        let shared = Arc::new(Shared {
            worker: self.id.clone(),
            backend: self.backend.clone(),
            types: plan.types,
            state: self.state.clone(),
            clock: self.clock.clone(),
            hooks: self.hooks.clone(),
            leases: Leases::default(),
            handoffs: Handoffs::default(),
            places: Places::default(),
            stopping: CancellationToken::new(),
            hard_stop: AtomicBool::new(false),
            retries: Retries::default(),
            metrics,
        });
        presence.announce(&shared).await;
        versions::publish_types(&shared).await;
        let queues = plan.queues;
        tracing::info!(worker = %self.id, ?queues, concurrency = self.concurrency, "worker started");

        let background_stop = CancellationToken::new();
        let mut background = JoinSet::new();
        background.spawn(presence.keep(shared.clone(), background_stop.clone()));
        background.spawn(keep_alive(
            shared.clone(),
            self.lease_for,
            background_stop.clone(),
        ));
        background.spawn(maintenance::maintain(
            shared.clone(),
            liveness.clone(),
            self.retention_of(&queues),
            self.rescue_interval,
            self.prune_interval,
            background_stop.clone(),
        ));
        #[cfg(feature = "metrics")]
        background.spawn(super::metrics::keep_queue_depth(
            shared.backend.clone(),
            queues.clone(),
            background_stop.clone(),
        ));
        if self.cron {
            for Periodic { job, schedule, .. } in plan.periodic {
                background.spawn(cron::schedule_ticks(
                    shared.clone(),
                    job,
                    schedule,
                    background_stop.clone(),
                ));
            }
        }
        let (sink, flusher) = Sink::start(shared.clone());

        let mut states = watch_queue_state(&shared, background_stop.clone()).await;
        let runners = Runners {
            shared: shared.clone(),
            queue: RunQueue::new(self.concurrency),
            sink,
            tasks: TaskTracker::new(),
        };
        // Should this future be dropped instead of shut down (a caller's timeout, say), the
        // runners stop with it, their jobs and all, as they would if the process died (a
        // handler in the middle of a poll on another thread stops once that poll returns); the
        // jobs' other tasks (a reserved job waiting for a place, say) end as at shutdown.
        let _runners = runners.spawn();
        let _stopping = shared.stopping.clone().drop_guard();
        let fetching = self.fetch_loop(&runners, &queues, &wakeup, &mut states);
        tokio::select! {
            _ = signal => {}
            _ = fetching => {}
        }

        // Graceful shutdown. The queue closes first: no job a runner takes has started after
        // shutdown began.
        let waiting = runners.queue.close();
        tracing::info!(
            worker = %self.id,
            held = shared.leases.snapshot().len(),
            waiting = waiting.len(),
            "worker stopping"
        );
        shared.stopping.cancel();
        for job in waiting {
            runners.hand_back(job).await;
        }
        end_deliveries(&shared, &queues, &wakeup).await;
        let Runners { sink, tasks, .. } = runners;
        tasks.close();
        if tokio::time::timeout(self.grace, tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                jobs = shared.leases.snapshot().len(),
                "grace period over: handing running jobs back"
            );
            shared.stop_running();
            tasks.wait().await;
        }
        flusher.close(sink).await;
        background_stop.cancel();
        while background.join_next().await.is_some() {}
        // Deregistered by now: ending the hold marks nobody gone.
        drop(liveness);
        tracing::info!(worker = %self.id, "worker stopped");
        Ok(())
    }

    /// Holds the worker's liveness, so that other workers rescue its jobs at once should its
    /// process die. Without it (the store refused), its jobs are rescued when their leases lapse.
    ///
    /// Waits up to [`FIRST_HOLD`] for the hold to stand before the worker takes any job: a
    /// worker that dies right after its first fetch is then still seen gone.
    async fn hold_liveness(&self) -> Liveness {
        let params = HoldParams {
            worker: self.id.clone(),
        };
        match self.backend.hold_liveness(params).await {
            Ok(liveness) => {
                let stands = liveness.stands_within(FIRST_HOLD).await;
                if !stands && liveness.can_stand() {
                    tracing::warn!(worker = %self.id, "the worker's liveness does not stand yet; should it die before it does, its jobs wait for their leases to lapse");
                }
                liveness
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not hold the worker's liveness; should it die, its jobs wait for their leases to lapse");
                Liveness::unsupported()
            }
        }
    }

    /// The retention policy of each of `queues`.
    fn retention_of(&self, queues: &[String]) -> Vec<(String, Retention)> {
        queues
            .iter()
            .map(|q| {
                let policy = self
                    .retention
                    .get(q)
                    .copied()
                    .unwrap_or(self.default_retention);
                (q.clone(), policy)
            })
            .collect()
    }

    /// Leases jobs while there are free slots, sleeping on the backend's wake-up when idle.
    async fn fetch_loop(
        &self,
        runners: &Runners,
        queues: &[String],
        wakeup: &Wakeup,
        states: &mut QueueStates,
    ) {
        let shared = &runners.shared;
        let queue = &runners.queue;
        let mut window = Window::new(self.concurrency, self.prefetch, shared.backend.max_fetch());
        let mut pause = Duration::from_millis(50);
        let mut flow_retry = FLOW_RETRY;
        let mut rated = RatedStarts::default();
        // The last hold-off ran out: fetch now, whatever the room.
        let mut held_off = false;
        // The last fetch leased no job that counts against the limits: no room, or no job.
        let mut roomless = false;
        // Only the names and versions this worker runs: another's job waits for a worker that
        // knows it.
        let mut known: Vec<KnownJob> = shared
            .types
            .values()
            .map(|t| KnownJob {
                name: t.name.to_string(),
                version: t.version,
            })
            .collect();
        known.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        loop {
            // Jobs leased straight to this worker while it was idle (see
            // `FetchParams::deliver`) take a free slot each, if there is one: it offered places
            // its handlers had idle, not slots, and a fetch that took jobs since ended the offer
            // but not the deliveries under way, which then run beyond the window.
            let delivered = wakeup.delivered();
            if !delivered.is_empty() {
                let held = hold(shared, delivered, None);
                let slots = std::iter::repeat_with(|| window.try_slot());
                start_held(runners, held, slots);
                // As after a fetch: they start before the next fetch is prepared.
                tokio::task::yield_now().await;
            }
            let mut permits = tokio::select! {
                permits = window.take() => permits,
                _ = wakeup.wait() => continue,
            };
            let (open, flow) = {
                let state = states.borrow_and_update();
                let open: Vec<String> = queues
                    .iter()
                    .filter(|q| !state.paused.contains(*q))
                    .cloned()
                    .collect();
                let flow = state.flow_of(&open);
                (open, flow)
            };
            if open.is_empty() {
                drop(permits);
                // Every queue is paused: wait for a resume (or a delivery made before).
                tokio::select! {
                    changed = states.changed() => if changed.is_err() {
                        tokio::time::sleep(self.poll_interval).await;
                    },
                    _ = wakeup.wait() => {}
                }
                continue;
            }
            let limited = !flow.is_empty();
            // Only concurrency limits, a queue's or its keys', know ended leases or hold off.
            let capped = flow
                .iter()
                .any(|f| f.limits.concurrency.is_some() || f.keyed);
            // What the store counts of the worker's own jobs, where a limit caps the fetch.
            let counted = if capped {
                shared.leases.counted()
            } else {
                HashMap::new()
            };
            // A fetch reserves while one of the worker's jobs of the queue holds a place to hand
            // on, or while none of its leases counts at all: its own limited jobs will. Not
            // after a fetch that found no room (until one finds some), nor while ended jobs
            // still count by their leases (their writes free room: it may hold off for them).
            let capped_alone = reserving(shared, &open, &flow);
            let holds_place = capped_alone
                .as_ref()
                .is_some_and(|queue| shared.leases.holds_place(queue));
            let reserving = capped_alone
                .filter(|queue| holds_place || (!roomless && !counted.contains_key(queue)));
            // The jobs that end from now until the fetch is back wait for its reserved ones.
            if let Some(queue) = &reserving {
                shared.handoffs.fetching(queue);
            }
            let freed = shared.leases.freed_mark();
            // A fetch that may reserve leases beyond the limits has work to do at once.
            let wait = (capped && !held_off && reserving.is_none())
                .then(|| hold_off(&flow, &open, &counted, window.batch()))
                .flatten();
            if let Some(wait) = wait {
                drop(permits);
                held_off = true;
                tokio::select! {
                    _ = shared.leases.freed_to(freed + wait.places as u64) => held_off = false,
                    _ = states.changed() => held_off = false,
                    // A delivery made before the limits came (the top of the loop starts it).
                    _ = wakeup.wait() => held_off = false,
                    _ = tokio::time::sleep(wait.at_most) => {}
                }
                continue;
            }
            held_off = false;
            if capped {
                // A limit caps the fetch at the room that ended jobs leave: let the handlers
                // that are ending too end first, so they join this fetch's room rather than
                // make a small fetch of their own next (with their slots, when the slots are
                // what bounds it).
                tokio::task::yield_now().await;
                window.take_free(&mut permits);
            }
            let ended = if capped {
                // The places its promoted jobs gave up are free for this fetch too.
                shared.tell_places(false).await;
                shared.leases.ended()
            } else {
                Vec::new()
            };
            let now = shared.clock.now();
            let rates = limited.then(|| flow.clone());
            // With no place held, only this fetch's own limited jobs will hand places on: the
            // store reserves at most `reserve` more than it leases of those, so 1, the least
            // that reserves at all. Should it find no room, that one goes back at once.
            let reserve = match &reserving {
                Some(_) if holds_place => permits.len(),
                Some(_) => 1,
                None => 0,
            };
            // An idle worker takes jobs straight away, as many as its handlers are idle; not
            // where limits hold jobs back, which only a fetch checks.
            let deliver = if limited { 0 } else { queue.open_places() };
            let params = FetchParams {
                known: Some(known.clone()),
                queues: open,
                limit: permits.len(),
                worker: self.id.clone(),
                lease_for: self.lease_for,
                now,
                flow,
                ended,
                reserve,
                deliver,
            };
            let asked = permits.len();
            let (leased, failed) = match shared.backend.fetch(params).await {
                Ok(leased) => {
                    let (waiting, idle) = queue.backlog();
                    window.fetched(asked, leased.len(), waiting, idle);
                    (leased, None)
                }
                Err(e) => (Vec::new(), Some(e)),
            };
            let held = hold(shared, leased, reserving.as_deref());
            if let Some(e) = failed {
                drop(permits);
                tracing::warn!(error = %e, retry_in_ms = pause.as_millis() as u64, "fetch failed");
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = wakeup.wait() => {}
                }
                pause = (pause * 2).min(Duration::from_secs(5));
                continue;
            }
            // A fetch that found no room may still have reserved a job, which no place can be
            // handed to (see `Handoffs::arrived`): it goes back, and the loop waits as after an
            // empty fetch.
            roomless = held.contexts.iter().all(|(_, reserved)| *reserved);
            let no_room = roomless
                && !held.contexts.is_empty()
                && !reserving
                    .as_deref()
                    .is_some_and(|queue| shared.leases.holds_place(queue));
            if held.contexts.is_empty() || no_room {
                start_held(runners, held, permits.into_iter().map(Some));
                let mut idle = shared
                    .retries
                    .idle_for(shared.clock.now(), self.poll_interval);
                if limited {
                    idle = idle.min(flow_retry);
                    flow_retry = (flow_retry * 2).min(FLOW_RETRY_MAX);
                    if let Some(opens) = rated.opens_in(now, shared.clock.now()) {
                        idle = idle.min(opens);
                    }
                }
                // Without room, new jobs are no reason to fetch again (and the jobs it hands
                // back wake the queue's workers): room is.
                tokio::select! {
                    _ = wakeup.wait(), if !no_room => {}
                    _ = shared.retries.scheduled() => {}
                    _ = states.changed() => {}
                    _ = shared.leases.freed_to(freed + 1), if limited => {}
                    _ = tokio::time::sleep(idle) => {}
                }
                continue;
            }
            pause = Duration::from_millis(50);
            flow_retry = FLOW_RETRY;
            if let Some(flow) = &rates {
                rated.record(now, flow, held.contexts.iter().map(|(ctx, _)| ctx.queue()));
            }
            start_held(runners, held, permits.into_iter().map(Some));
            // Let the runners start the jobs just queued before the next fetch is prepared and
            // sent: on this thread they would otherwise wait for it (about 35 µs of an idle
            // worker's pickup).
            tokio::task::yield_now().await;
        }
    }
}

/// Starts held jobs, each in its slot of `slots`: tells their start to whoever listens, then
/// queues each one for a runner (a reserved one once a place is handed to it).
fn start_held(
    runners: &Runners,
    held: Held,
    slots: impl Iterator<Item = Option<OwnedSemaphorePermit>>,
) {
    let Held { contexts, handed } = held;
    if contexts.is_empty() {
        return;
    }
    let shared = &runners.shared;
    if shared.backend.events_heard() {
        let now = shared.clock.now();
        let started = contexts
            .iter()
            .map(|(ctx, _)| JobEvent::of(ctx.record(), EventKind::Started, now));
        shared.backend.publish(started.collect());
    }
    let jobs = contexts.into_iter().zip(slots);
    if handed.is_empty() {
        // No job is reserved (most often): queued as they go by.
        runners.queue_all(jobs.map(|((ctx, _), slot)| Queued { ctx, slot }));
        return;
    }
    let (reserved, jobs): (Vec<_>, Vec<_>) = jobs.partition(|((_, reserved), _)| *reserved);
    runners.queue_all(
        jobs.into_iter()
            .map(|((ctx, _), slot)| Queued { ctx, slot }),
    );
    let reserved = reserved
        .into_iter()
        .map(|((ctx, _), slot)| Queued { ctx, slot })
        .zip(handed);
    runners.wait_for_places(reserved.collect());
}

/// Ends the deliveries to a stopping worker, and holds the jobs delivered that did not start,
/// so that they are handed back with the rest of its leases.
async fn end_deliveries(shared: &Shared, queues: &[String], wakeup: &Wakeup) {
    let params = EndDeliveriesParams {
        worker: shared.worker.clone(),
        queues: queues.to_vec(),
    };
    if let Err(e) = shared.backend.end_deliveries(params).await {
        tracing::warn!(error = %e, "could not end the deliveries to this worker; a job delivered from now on is rescued when its lease lapses");
    }
    // Closed, so that a delivery too late for this goes back to the store at once.
    for job in wakeup.close() {
        let ctx = JobContext::of(shared.backend.clone(), job);
        shared.leases.insert(ctx, false);
    }
}

/// The jobs a fetch leased, held: each one's context, and whether it is reserved; and what
/// each reserved one waits for.
struct Held {
    contexts: Vec<(JobContext, bool)>,
    handed: Vec<Handed>,
}

/// Holds the jobs a fetch leased, reserved ones included; for a fetch that reserved leases of
/// `reserving`, hands them the places of that queue's jobs that ended meanwhile (also when it
/// failed or found nothing, which frees those places).
fn hold(shared: &Shared, leased: Vec<LeasedJob>, reserving: Option<&str>) -> Held {
    let contexts: Vec<(JobContext, bool)> = leased
        .into_iter()
        .map(|job| {
            let reserved = job.reserved;
            let ctx = JobContext::of(shared.backend.clone(), job);
            shared.leases.insert(ctx.clone(), reserved);
            (ctx, reserved)
        })
        .collect();
    let handed = match reserving {
        Some(queue) => {
            let reserved: Vec<LeaseRef> = contexts
                .iter()
                .filter(|(_, reserved)| *reserved)
                .map(|(ctx, _)| ctx.lease())
                .collect();
            shared.handoffs.arrived(queue, &reserved, &shared.leases)
        }
        None => Vec::new(),
    };
    Held { contexts, handed }
}

/// The queue a fetch from `open` under `flow` may reserve leases of beyond its limit (see
/// [`handoff`](super::handoff)), if any: one queue capped by a concurrency alone, on a backend
/// that reserves.
fn reserving(shared: &Shared, open: &[String], flow: &[QueueFlow]) -> Option<String> {
    let [queue] = open else {
        return None;
    };
    let capped_alone = flow.iter().any(|f| {
        &f.queue == queue && f.limits.concurrency.is_some() && f.limits.rate.is_none() && !f.keyed
    });
    (capped_alone && shared.backend.reserves()).then(|| queue.clone())
}
