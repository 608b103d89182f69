//! Model check of the lease protocol of [`jobs_core::backend`], with `stateright`.
//!
//! The model is a store of a few jobs, a few workers and the writes in flight between them.
//! The checker explores every interleaving exhaustively (breadth first) and checks the
//! protocol's properties in every reachable state.
//!
//! # How each action maps to the backend contract
//!
//! - `Fetch(worker, job)`: `Backend::fetch(FetchParams { worker, lease_for, now, .., reserve: 0 })` handing
//!   out `job` (any pending job: the model ignores priority and FIFO order, which is a superset
//!   of the real order). The attempt goes up by one and the job gets a fresh lease token (a
//!   per-job counter here: a lease is named by `(job, token)`, like `LeaseRef { id, token }`);
//!   the lease expires `LEASE` ticks from now.
//! - `Renew(worker, job)`: `Backend::renew(RenewParams { items: [lease], expires_at, now })`,
//!   a synchronous call (the worker's renewer, `worker/renew.rs`). Refused when the token no
//!   longer matches a running job or the lease already lapsed (`expires_at < now`). A worker
//!   whose renewal is refused drops the lease (`worker/leases.rs`: "lease lost"), as it does in
//!   the worker. `Backend::progress` checks the lease the same way and is covered by it.
//! - `Complete(worker, job)`, `Fail(worker, job)`, `Release(worker, job)`: the worker's
//!   outcome (`worker/outcome.rs`) is sent as a write carrying the lease token and put in
//!   flight; the worker forgets the lease. The write is `Backend::complete(CompleteParams {
//!   items: [Completion { lease, .. }] })`, `Backend::fail(FailParams { items: [Failure {
//!   lease, .. }] })` (a retryable failure: pending again with attempts left, else dead) or
//!   `Backend::release(ReleaseParams { items: [Release { lease, run_at: None }] })` (pending,
//!   attempt given back; at most `releases` in a run, so runs are finite).
//! - `Deliver(write)` / `Repeat(write)`: the store applies a write in flight, in any order and
//!   any time after it was sent. `Deliver` removes it; `Repeat` applies it and keeps it in flight
//!   once more (a retry after a cut reply, a duplicated message). A write is refused unless its
//!   token matches the job's running lease, except a completion repeated with the token it
//!   applied under, which is accepted and changes nothing.
//! - `Rescue`: `Backend::rescue(RescueParams { target: RescueTarget::Lapsed, now, limit, error })`: every running job whose
//!   lease lapsed (`expires_at < now`) goes back to pending with attempts left, else dead.
//! - `Tick`: time passes by one. Time is kept relative to now (each lease keeps its ticks
//!   left, `-1` meaning lapsed), which is all the contract's comparisons read, so the clock is
//!   bounded without cutting runs short.
//! - `Crash(worker)`: the worker forgets its lease and never writes again (its writes already
//!   in flight may still arrive). At least one worker survives, so jobs can still run.
//! - `Pause(worker)` / `Resume(worker)`: a paused worker (SIGSTOP, a long GC) does nothing and
//!   its writes in flight stay there until it resumes; its lease may lapse meanwhile.
//!
//! # Properties
//!
//! - `no job lost`: every job is in exactly one status with a state consistent with it, and a
//!   run that ends (no worker paused, and no action but a pause or a crash changes the state)
//!   ends with every job completed or dead.
//! - `no two completions`: a job's completion is applied at most once.
//! - `stale write never lands`: every write that changed the store carried the token of the
//!   job's running lease at that moment (checked apart from the store's own guard).
//! - `every leased job ends`: checked where it is sound for this bounded model: at a state
//!   where the run has ended, no job is still running (it was completed, failed, released or
//!   rescued).
//! - `sometimes` properties show the interesting paths are reachable: a rescue, a stale write
//!   refused, a repeated completion accepted, a job dead after its attempts.

use stateright::{Checker, Model, Property};

/// Ticks a lease lasts after a fetch or renewal.
const LEASE: i8 = 1;
/// Attempts a job has.
const MAX_ATTEMPTS: u8 = 2;

/// Where a job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Status {
    Pending,
    Running,
    Completed,
    Dead,
}

/// One job in the store.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Job {
    status: Status,
    attempt: u8,
    /// The running lease's token; for a completed job, the token it completed under.
    token: u8,
    /// Tokens handed out so far (the next fetch hands out `issued + 1`).
    issued: u8,
    /// Ticks left on the running lease; `-1` once it lapsed.
    lease_left: i8,
    /// Completions applied.
    completions: u8,
}

/// A worker's liveness.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Liveness {
    Live,
    Paused,
    Crashed,
}

/// One worker.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Worker {
    liveness: Liveness,
    /// The lease it holds, `(job, token)` (concurrency 1).
    held: Option<(usize, u8)>,
}

/// What a write asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Kind {
    Complete,
    Fail,
    Release,
}

/// A write in flight.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Write {
    worker: usize,
    job: usize,
    token: u8,
    kind: Kind,
    /// Already applied once and kept for a repeat.
    repeated: bool,
}

/// The whole system.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    jobs: Vec<Job>,
    workers: Vec<Worker>,
    /// Writes in flight, sorted (a multiset).
    flight: Vec<Write>,
    releases_left: u8,
    /// A write changed the store under a token that was not the running lease's.
    stale_landed: bool,
    rescued: bool,
    stale_refused: bool,
    repeat_accepted: bool,
}

/// The model's actions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Action {
    Fetch(usize, usize),
    Renew(usize),
    Send(usize, Kind),
    Deliver(usize),
    Repeat(usize),
    Rescue,
    Tick,
    Crash(usize),
    Pause(usize),
    Resume(usize),
}

/// Which store the model checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Store {
    /// The contract of `backend.rs`, as `memory.rs` implements it.
    Contract,
    /// Broken: a completion is applied to a running job whatever its token.
    CompleteIgnoresToken,
    /// Broken: a repeated completion is applied again instead of changing nothing.
    CompleteNotIdempotent,
}

/// The lease protocol with `jobs` jobs and `workers` workers.
struct LeaseModel {
    jobs: usize,
    workers: usize,
    /// Releases allowed in a run (a release gives the attempt back, so they are bounded).
    releases: u8,
    store: Store,
}

impl LeaseModel {
    /// Applies a write; says whether the store accepted it.
    fn apply(&self, state: &mut State, w: &Write) -> bool {
        let job = &mut state.jobs[w.job];
        let matches = job.status == Status::Running && job.token == w.token;
        match w.kind {
            Kind::Complete => {
                let ignores = self.store == Store::CompleteIgnoresToken;
                if matches || (ignores && job.status == Status::Running) {
                    job.status = Status::Completed;
                    job.token = w.token;
                    job.lease_left = -1;
                    job.completions += 1;
                    true
                } else if job.status == Status::Completed && job.token == w.token {
                    if self.store == Store::CompleteNotIdempotent {
                        job.completions += 1;
                    }
                    true
                } else {
                    false
                }
            }
            Kind::Fail if matches => {
                job.status = if job.attempt < MAX_ATTEMPTS {
                    Status::Pending
                } else {
                    Status::Dead
                };
                job.token = 0;
                job.lease_left = -1;
                true
            }
            Kind::Release if matches => {
                job.status = Status::Pending;
                job.attempt -= 1;
                job.token = 0;
                job.lease_left = -1;
                true
            }
            Kind::Fail | Kind::Release => false,
        }
    }

    /// Delivers write `i` of the flight, keeping it in flight once more when `repeat`.
    fn deliver(&self, state: &mut State, i: usize, repeat: bool) {
        let w = state.flight.remove(i);
        let before = state.jobs[w.job].clone();
        let accepted = self.apply(state, &w);
        if state.jobs[w.job] != before
            && !(before.status == Status::Running && before.token == w.token)
        {
            state.stale_landed = true;
        }
        if accepted && w.repeated && w.kind == Kind::Complete {
            state.repeat_accepted = true;
        }
        if !accepted {
            state.stale_refused = true;
        }
        if repeat {
            state.flight.push(Write {
                repeated: true,
                ..w
            });
            state.flight.sort();
        }
    }
}

impl Model for LeaseModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let job = Job {
            status: Status::Pending,
            attempt: 0,
            token: 0,
            issued: 0,
            lease_left: -1,
            completions: 0,
        };
        let worker = Worker {
            liveness: Liveness::Live,
            held: None,
        };
        vec![State {
            jobs: vec![job; self.jobs],
            workers: vec![worker; self.workers],
            flight: Vec::new(),
            releases_left: self.releases,
            stale_landed: false,
            rescued: false,
            stale_refused: false,
            repeat_accepted: false,
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        let crashed = state
            .workers
            .iter()
            .filter(|w| w.liveness == Liveness::Crashed)
            .count();
        for (i, worker) in state.workers.iter().enumerate() {
            match worker.liveness {
                Liveness::Live => {
                    match worker.held {
                        None => {
                            for (j, job) in state.jobs.iter().enumerate() {
                                if job.status == Status::Pending {
                                    actions.push(Action::Fetch(i, j));
                                }
                            }
                        }
                        Some(_) => {
                            actions.push(Action::Renew(i));
                            actions.push(Action::Send(i, Kind::Complete));
                            actions.push(Action::Send(i, Kind::Fail));
                            if state.releases_left > 0 {
                                actions.push(Action::Send(i, Kind::Release));
                            }
                        }
                    }
                    actions.push(Action::Pause(i));
                    if crashed + 1 < self.workers {
                        actions.push(Action::Crash(i));
                    }
                }
                Liveness::Paused => actions.push(Action::Resume(i)),
                Liveness::Crashed => {}
            }
        }
        for (i, w) in state.flight.iter().enumerate() {
            if state.workers[w.worker].liveness != Liveness::Paused {
                actions.push(Action::Deliver(i));
                if !w.repeated {
                    actions.push(Action::Repeat(i));
                }
            }
        }
        if state
            .jobs
            .iter()
            .any(|j| j.status == Status::Running && j.lease_left < 0)
        {
            actions.push(Action::Rescue);
        }
        if state
            .jobs
            .iter()
            .any(|j| j.status == Status::Running && j.lease_left >= 0)
        {
            actions.push(Action::Tick);
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        match action {
            Action::Fetch(i, j) => {
                let job = &mut s.jobs[j];
                job.status = Status::Running;
                job.attempt += 1;
                job.issued += 1;
                job.token = job.issued;
                job.lease_left = LEASE;
                s.workers[i].held = Some((j, job.token));
            }
            Action::Renew(i) => {
                let (j, token) = s.workers[i].held?;
                let job = &mut s.jobs[j];
                if job.status == Status::Running && job.token == token && job.lease_left >= 0 {
                    job.lease_left = LEASE;
                } else {
                    s.workers[i].held = None;
                    s.stale_refused = true;
                }
            }
            Action::Send(i, kind) => {
                let (job, token) = s.workers[i].held.take()?;
                if kind == Kind::Release {
                    s.releases_left -= 1;
                }
                s.flight.push(Write {
                    worker: i,
                    job,
                    token,
                    kind,
                    repeated: false,
                });
                s.flight.sort();
            }
            Action::Deliver(i) => self.deliver(&mut s, i, false),
            Action::Repeat(i) => self.deliver(&mut s, i, true),
            Action::Rescue => {
                for job in &mut s.jobs {
                    if job.status == Status::Running && job.lease_left < 0 {
                        job.status = if job.attempt < MAX_ATTEMPTS {
                            Status::Pending
                        } else {
                            Status::Dead
                        };
                        job.token = 0;
                        s.rescued = true;
                    }
                }
            }
            Action::Tick => {
                for job in &mut s.jobs {
                    if job.status == Status::Running && job.lease_left >= 0 {
                        job.lease_left -= 1;
                    }
                }
            }
            Action::Crash(i) => {
                s.workers[i] = Worker {
                    liveness: Liveness::Crashed,
                    held: None,
                };
            }
            Action::Pause(i) => s.workers[i].liveness = Liveness::Paused,
            Action::Resume(i) => s.workers[i].liveness = Liveness::Live,
        }
        (s != *last).then_some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("no job lost", |m: &LeaseModel, s: &State| {
                s.jobs.iter().all(consistent) && (!ended(m, s) || s.jobs.iter().all(finished))
            }),
            Property::always("no two completions", |_, s: &State| {
                s.jobs.iter().all(|j| j.completions <= 1)
            }),
            Property::always("stale write never lands", |_, s: &State| !s.stale_landed),
            Property::always("every leased job ends", |m: &LeaseModel, s: &State| {
                !ended(m, s) || s.jobs.iter().all(|j| j.status != Status::Running)
            }),
            Property::sometimes("a rescue happens", |_, s: &State| s.rescued),
            Property::sometimes("a stale write is refused", |_, s: &State| s.stale_refused),
            Property::sometimes("a repeated completion is accepted", |_, s: &State| {
                s.repeat_accepted
            }),
            Property::sometimes("a job dies after its attempts", |_, s: &State| {
                s.jobs.iter().any(|j| j.status == Status::Dead)
            }),
        ]
    }
}

/// A job's fields agree with its status.
fn consistent(job: &Job) -> bool {
    let leased = job.lease_left >= 0;
    match job.status {
        Status::Pending => job.attempt < MAX_ATTEMPTS && !leased,
        Status::Running => (1..=MAX_ATTEMPTS).contains(&job.attempt) && job.token == job.issued,
        Status::Completed => job.completions >= 1 && !leased,
        Status::Dead => job.attempt == MAX_ATTEMPTS && !leased,
    }
}

/// The job reached a final status.
fn finished(job: &Job) -> bool {
    matches!(job.status, Status::Completed | Status::Dead)
}

/// The run has ended: no worker is paused (a paused worker resumes) and no action but a pause
/// or a crash, which make no progress, changes the state any more.
fn ended(model: &LeaseModel, state: &State) -> bool {
    let mut actions = Vec::new();
    model.actions(state, &mut actions);
    state.workers.iter().all(|w| w.liveness != Liveness::Paused)
        && actions
            .into_iter()
            .filter(|a| !matches!(a, Action::Pause(_) | Action::Crash(_)))
            .all(|a| model.next_state(state, a).is_none())
}

/// Checks `model` exhaustively, printing the states explored.
fn check(model: LeaseModel) -> impl Checker<LeaseModel> {
    let label = format!(
        "{:?} store, {} jobs, {} workers",
        model.store, model.jobs, model.workers
    );
    let checker = model.checker().spawn_bfs().join();
    println!(
        "{label}: {} states ({} unique), depth {}",
        checker.state_count(),
        checker.unique_state_count(),
        checker.max_depth()
    );
    assert!(checker.unique_state_count() > 0);
    checker
}

#[test]
fn the_lease_protocol_holds_for_two_jobs_and_two_workers() {
    check(LeaseModel {
        jobs: 2,
        workers: 2,
        releases: 0,
        store: Store::Contract,
    })
    .assert_properties();
}

#[test]
fn the_lease_protocol_holds_for_one_job_and_three_workers() {
    check(LeaseModel {
        jobs: 1,
        workers: 3,
        releases: 1,
        store: Store::Contract,
    })
    .assert_properties();
}

#[test]
fn a_completion_that_ignores_the_token_is_caught() {
    let checker = check(LeaseModel {
        jobs: 1,
        workers: 2,
        releases: 1,
        store: Store::CompleteIgnoresToken,
    });
    let path = checker.assert_any_discovery("stale write never lands");
    println!("counterexample: {:?}", path.into_actions());
}

#[test]
fn a_repeated_completion_applied_again_is_caught() {
    let checker = check(LeaseModel {
        jobs: 1,
        workers: 2,
        releases: 1,
        store: Store::CompleteNotIdempotent,
    });
    let path = checker.assert_any_discovery("no two completions");
    println!("counterexample: {:?}", path.into_actions());
}
