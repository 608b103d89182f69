//! The job types the worker checks run, implemented by hand (no macro in jobs-core).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{
    AnyBackend, Backend, BackendContext, Backoff, CompleteParams, Completion, CompletionHook,
    CronSpec, Job, JobContext, JobError, JobId, JobOptions, StateKey, StateMap, Timestamp,
};

use super::support::QUEUE;

fn options(attempts: u32, backoff: Backoff) -> JobOptions {
    JobOptions {
        queue: QUEUE.to_string(),
        max_attempts: attempts,
        backoff,
        priority: 10,
        timeout: None,
        tags: Vec::new(),
    }
}

const FAST: Backoff = Backoff::fixed(Duration::from_millis(5));

/// Reports 50 % progress and returns `n * 2`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Echo {
    /// The input.
    pub n: u64,
}

impl Job for Echo {
    const NAME: &'static str = "conformance.echo";
    type Output = u64;
    fn options() -> JobOptions {
        options(3, FAST)
    }
    async fn run(self, ctx: JobContext, _state: StateMap) -> Result<u64, JobError> {
        ctx.progress(50).await?;
        Ok(self.n * 2)
    }
}

/// Fails its first `failures` attempts, then succeeds with the attempt number.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Flaky {
    pub failures: u32,
}

impl Job for Flaky {
    const NAME: &'static str = "conformance.flaky";
    type Output = u32;
    fn options() -> JobOptions {
        options(5, Backoff::exponential(Duration::from_secs(1)))
    }
    async fn run(self, ctx: JobContext, _state: StateMap) -> Result<u32, JobError> {
        if ctx.attempt() <= self.failures {
            return Err(JobError::retryable(format!(
                "flaky failure {}",
                ctx.attempt()
            )));
        }
        Ok(ctx.attempt())
    }
}

/// Always fails; fatally when asked.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Fails {
    pub fatal: bool,
}

impl Job for Fails {
    const NAME: &'static str = "conformance.fails";
    type Output = ();
    fn options() -> JobOptions {
        options(3, FAST)
    }
    async fn run(self, ctx: JobContext, _state: StateMap) -> Result<(), JobError> {
        let message = format!("failure in attempt {}", ctx.attempt());
        Err(if self.fatal {
            JobError::fatal(message)
        } else {
            JobError::retryable(message)
        })
    }
}

/// Panics.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Panics {}

impl Job for Panics {
    const NAME: &'static str = "conformance.panics";
    type Output = ();
    fn options() -> JobOptions {
        options(1, FAST)
    }
    async fn run(self, _ctx: JobContext, _state: StateMap) -> Result<(), JobError> {
        panic!("boom")
    }
}

/// Its payload's decoding panics (an assertion in a `Deserialize` of the user's own).
#[derive(Debug, Serialize)]
pub(super) struct PanicsDecoding {}

impl<'de> Deserialize<'de> for PanicsDecoding {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        panic!("undecodable")
    }
}

impl Job for PanicsDecoding {
    const NAME: &'static str = "conformance.panics_decoding";
    type Output = ();
    fn options() -> JobOptions {
        options(3, FAST)
    }
    async fn run(self, _ctx: JobContext, _state: StateMap) -> Result<(), JobError> {
        Ok(())
    }
}

/// Reports 1 % progress once started, then sleeps `ms` milliseconds.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Sleeps {
    pub ms: u64,
}

impl Job for Sleeps {
    const NAME: &'static str = "conformance.sleeps";
    type Output = u64;
    fn options() -> JobOptions {
        options(1, FAST)
    }
    async fn run(self, ctx: JobContext, _state: StateMap) -> Result<u64, JobError> {
        ctx.progress(1).await?; // started: visible to the checks
        tokio::time::sleep(Duration::from_millis(self.ms)).await;
        Ok(self.ms)
    }
}

/// Reports 1 % progress once started, then waits until its gate opens ([`Gate::open`]).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Gated {
    pub gate: u64,
}

impl Job for Gated {
    const NAME: &'static str = "conformance.gated";
    type Output = ();
    fn options() -> JobOptions {
        options(1, FAST)
    }
    async fn run(self, ctx: JobContext, _state: StateMap) -> Result<(), JobError> {
        ctx.progress(1).await?; // started: visible to the checks
        let gate = Gate(self.gate).semaphore();
        // Closed: open.
        let _ = gate.acquire().await;
        Ok(())
    }
}

/// What [`Gated`] jobs wait for, one per check (checks of several backends share a process).
pub(super) struct Gate(u64);

impl Gate {
    /// A gate of its own, shut.
    pub(super) fn new() -> Gate {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Gate(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    /// A job that waits for this gate.
    pub(super) fn job(&self) -> Gated {
        Gated { gate: self.0 }
    }

    /// Lets every job of this gate go on, now and from now on.
    pub(super) fn open(&self) {
        self.semaphore().close();
    }

    fn semaphore(&self) -> Arc<tokio::sync::Semaphore> {
        static GATES: Mutex<Option<HashMap<u64, Arc<tokio::sync::Semaphore>>>> = Mutex::new(None);
        let mut gates = GATES.lock().unwrap_or_else(|e| e.into_inner());
        let gate = gates.get_or_insert_with(HashMap::new).entry(self.0);
        gate.or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(0)))
            .clone()
    }
}

/// Hangs on its first attempt; a later one returns its attempt number.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct StallsOnce {}

impl Job for StallsOnce {
    const NAME: &'static str = "conformance.stalls_once";
    type Output = u32;
    fn options() -> JobOptions {
        options(3, FAST)
    }
    async fn run(self, ctx: JobContext, _state: StateMap) -> Result<u32, JobError> {
        if ctx.attempt() == 1 {
            std::future::pending::<()>().await;
        }
        Ok(ctx.attempt())
    }
}

/// Counts runs per job id, to catch a job run twice. Clones share the counts.
#[derive(Clone, Debug, Default)]
pub struct Counter {
    runs: Arc<Mutex<HashMap<JobId, u32>>>,
}

impl Counter {
    /// How many times each job ran.
    pub fn runs(&self) -> HashMap<JobId, u32> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Counts a run of `id`; returns how many it has had, this one included.
    fn bump(&self, id: JobId) -> u32 {
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let count = runs.entry(id).or_default();
        *count += 1;
        *count
    }
}

/// Counts its run in the worker's `State<Counter>`, after `ms` milliseconds (at once for 0).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Counted {
    pub(super) ms: u64,
}

impl Job for Counted {
    const NAME: &'static str = "conformance.counted";
    type Output = ();
    fn options() -> JobOptions {
        options(3, FAST)
    }
    fn required_state() -> Vec<StateKey> {
        vec![StateKey::of::<Counter>()]
    }
    async fn run(self, ctx: JobContext, state: StateMap) -> Result<(), JobError> {
        let counter = state.require::<Counter>()?;
        if self.ms > 0 {
            tokio::time::sleep(Duration::from_millis(self.ms)).await;
        }
        counter.bump(ctx.id());
        Ok(())
    }
}

/// How long [`Snoozes`] and [`RateLimited`] ask to wait.
pub(super) const LATER: Duration = Duration::from_secs(30);

/// Snoozes for [`LATER`] on its first run (counted in the worker's `State<Counter>`), then
/// succeeds with its attempt number.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Snoozes {}

impl Job for Snoozes {
    const NAME: &'static str = "conformance.snoozes";
    type Output = u32;
    fn options() -> JobOptions {
        options(3, FAST)
    }
    fn required_state() -> Vec<StateKey> {
        vec![StateKey::of::<Counter>()]
    }
    async fn run(self, ctx: JobContext, state: StateMap) -> Result<u32, JobError> {
        if state.require::<Counter>()?.bump(ctx.id()) == 1 {
            return Err(JobError::snooze(LATER));
        }
        Ok(ctx.attempt())
    }
}

/// Asks to be retried in [`LATER`] (a `Retry-After`) on its first attempt, though its backoff
/// says 1 s; then succeeds with its attempt number.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct RateLimited {}

impl Job for RateLimited {
    const NAME: &'static str = "conformance.rate_limited";
    type Output = u32;
    fn options() -> JobOptions {
        options(3, Backoff::exponential(Duration::from_secs(1)))
    }
    async fn run(self, ctx: JobContext, _state: StateMap) -> Result<u32, JobError> {
        if ctx.attempt() == 1 {
            return Err(JobError::retry_in(LATER, "rate limited: retry after 30 s"));
        }
        Ok(ctx.attempt())
    }
}

/// A periodic job ticking every second.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Ticker {}

impl Job for Ticker {
    const NAME: &'static str = "conformance.ticker";
    type Output = ();
    fn options() -> JobOptions {
        options(1, FAST)
    }
    fn cron() -> Option<CronSpec> {
        Some(CronSpec {
            expression: "* * * * * *",
            timezone: Some("Europe/Paris"),
        })
    }
    async fn run(self, _ctx: JobContext, _state: StateMap) -> Result<(), JobError> {
        Ok(())
    }
}

/// What [`Overlaps`] jobs saw: how many ran at once at most, and when each started. Clones
/// share it.
#[derive(Clone, Debug, Default)]
pub(super) struct Overlap {
    inner: Arc<Mutex<OverlapState>>,
}

#[derive(Debug, Default)]
struct OverlapState {
    running: u32,
    max: u32,
    starts: Vec<std::time::Instant>,
}

impl Overlap {
    /// The most jobs that ran at once.
    pub(super) fn max(&self) -> u32 {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).max
    }

    /// When each job started, in order.
    pub(super) fn starts(&self) -> Vec<std::time::Instant> {
        let mut starts = self
            .inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .starts
            .clone();
        starts.sort_unstable();
        starts
    }

    fn enter(&self) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.running += 1;
        s.max = s.max.max(s.running);
        s.starts.push(std::time::Instant::now());
    }

    fn leave(&self) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).running -= 1;
    }
}

/// Runs for `ms` milliseconds, recorded in the worker's `State<Overlap>`; returns its attempt.
/// With `commit_ms`, it then finishes through a completion hook that takes that long before
/// it completes the job, as a handler's transaction committing with the completion would,
/// and counts as running until then.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Overlaps {
    pub(super) ms: u64,
    pub(super) commit_ms: u64,
}

impl Job for Overlaps {
    const NAME: &'static str = "conformance.overlaps";
    type Output = u32;
    fn options() -> JobOptions {
        options(3, FAST)
    }
    fn required_state() -> Vec<StateKey> {
        vec![StateKey::of::<Overlap>()]
    }
    async fn run(self, ctx: JobContext, state: StateMap) -> Result<u32, JobError> {
        let overlap = state.require::<Overlap>()?;
        overlap.enter();
        tokio::time::sleep(Duration::from_millis(self.ms)).await;
        if self.commit_ms == 0 {
            overlap.leave();
        } else {
            ctx.set_completion_hook(Box::new(SlowCommit {
                backend: ctx.backend().clone(),
                overlap: Overlap::clone(&overlap),
                ms: self.commit_ms,
            }));
        }
        Ok(ctx.attempt())
    }
}

/// The completion hook of [`Overlaps`] with a `commit_ms`.
struct SlowCommit {
    backend: AnyBackend,
    overlap: Overlap,
    ms: u64,
}

#[async_trait::async_trait]
impl CompletionHook for SlowCommit {
    async fn complete(
        self: Box<Self>,
        completion: Completion,
        now: Timestamp,
    ) -> Result<bool, crate::Error> {
        tokio::time::sleep(Duration::from_millis(self.ms)).await;
        self.overlap.leave();
        let items = vec![completion];
        let accepted = self.backend.complete(CompleteParams { items, now }).await?;
        Ok(accepted == [true])
    }
}

/// Version 2 of a payload whose version 1 stored `{"count": n}`; returns `"{label}:{n}"`.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Versioned {
    pub n: u64,
    pub label: String,
}

/// What version 1 of [`Versioned`] stored.
#[derive(Deserialize)]
pub(super) struct VersionedV1 {
    count: u64,
}

impl crate::upgrade::PayloadVersion for VersionedV1 {
    const JOB: &'static str = Versioned::NAME;
    const VERSION: u32 = 1;
}

fn versioned_from_v1(old: VersionedV1) -> Versioned {
    Versioned {
        n: old.count,
        label: "upgraded".to_string(),
    }
}

inventory::submit! {
    crate::upgrade::Upgrade::new(Versioned::NAME, 1, |raw| {
        crate::upgrade::upgrade_with(raw, versioned_from_v1)
    })
}

impl Job for Versioned {
    const NAME: &'static str = "conformance.versioned";
    const VERSION: u32 = 2;
    type Output = String;
    fn options() -> JobOptions {
        options(1, FAST)
    }
    fn schema() -> Option<serde_json::Value> {
        Some(serde_json::json!({
            "type": "object",
            "properties": { "n": { "type": "integer" }, "label": { "type": "string" } },
            "required": ["n", "label"],
        }))
    }
    async fn run(self, _ctx: JobContext, _state: StateMap) -> Result<String, JobError> {
        Ok(format!("{}:{}", self.label, self.n))
    }
}

/// At version 3 with an upgrade from 2 only: jobs stored at version 1 have no path.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Unreachable {
    pub n: u64,
}

inventory::submit! {
    crate::upgrade::Upgrade::new(Unreachable::NAME, 2, |raw| {
        crate::upgrade::upgrade_with(raw, |old: Unreachable| old)
    })
}

impl Job for Unreachable {
    const NAME: &'static str = "conformance.unreachable";
    const VERSION: u32 = 3;
    type Output = u64;
    fn options() -> JobOptions {
        options(1, FAST)
    }
    async fn run(self, _ctx: JobContext, _state: StateMap) -> Result<u64, JobError> {
        Ok(self.n)
    }
}

/// The orders workflow of the worker checks: reserve → pay → email and PDF side by side →
/// finish, with unreserve as the reservation's compensation. Order 99's payment is declined.
pub(super) mod orders {
    use super::*;
    use crate::StepInput;

    /// The order whose payment is declined.
    pub(crate) const DECLINED: u64 = 99;

    /// Reserves stock for `order`; returns the reservation (order × 10).
    #[derive(Debug, Serialize, Deserialize)]
    pub(crate) struct Reserve {
        pub(crate) order: u64,
    }

    impl Job for Reserve {
        const NAME: &'static str = "conformance.orders.reserve";
        type Output = u64;
        fn options() -> JobOptions {
            options(3, FAST)
        }
        async fn run(self, _: JobContext, _: StateMap) -> Result<u64, JobError> {
            Ok(self.order * 10)
        }
    }

    impl StepInput for Reserve {
        type Input = u64;
        const FIELDS: &'static [&'static str] = &["order"];
    }

    /// Pays for `reservation`; returns the receipt, or fails fatally for the declined order.
    #[derive(Debug, Serialize, Deserialize)]
    pub(crate) struct Pay {
        pub(crate) reservation: u64,
    }

    impl Job for Pay {
        const NAME: &'static str = "conformance.orders.pay";
        type Output = String;
        fn options() -> JobOptions {
            options(3, FAST)
        }
        async fn run(self, ctx: JobContext, _: StateMap) -> Result<String, JobError> {
            ctx.progress(60).await?;
            if self.reservation == DECLINED * 10 {
                return Err(JobError::fatal("card declined"));
            }
            Ok(format!("receipt-{}", self.reservation))
        }
    }

    impl StepInput for Pay {
        type Input = u64;
        const FIELDS: &'static [&'static str] = &["reservation"];
    }

    /// Sends the confirmation for `receipt`.
    #[derive(Debug, Serialize, Deserialize)]
    pub(crate) struct Email {
        pub(crate) receipt: String,
    }

    impl Job for Email {
        const NAME: &'static str = "conformance.orders.email";
        type Output = bool;
        fn options() -> JobOptions {
            options(3, FAST)
        }
        async fn run(self, _: JobContext, _: StateMap) -> Result<bool, JobError> {
            Ok(self.receipt.starts_with("receipt-"))
        }
    }

    impl StepInput for Email {
        type Input = String;
        const FIELDS: &'static [&'static str] = &["receipt"];
    }

    /// Renders the PDF of `receipt`; returns its file name.
    #[derive(Debug, Serialize, Deserialize)]
    pub(crate) struct Pdf {
        pub(crate) receipt: String,
    }

    impl Job for Pdf {
        const NAME: &'static str = "conformance.orders.pdf";
        type Output = String;
        fn options() -> JobOptions {
            options(3, FAST)
        }
        async fn run(self, _: JobContext, _: StateMap) -> Result<String, JobError> {
            Ok(format!("{}.pdf", self.receipt))
        }
    }

    impl StepInput for Pdf {
        type Input = String;
        const FIELDS: &'static [&'static str] = &["receipt"];
    }

    /// Completes the order with what the email and the PDF steps returned.
    #[derive(Debug, Serialize, Deserialize)]
    pub(crate) struct Finish {
        pub(crate) sent: bool,
        pub(crate) pdf: String,
    }

    impl Job for Finish {
        const NAME: &'static str = "conformance.orders.finish";
        type Output = String;
        fn options() -> JobOptions {
            options(3, FAST)
        }
        async fn run(self, _: JobContext, _: StateMap) -> Result<String, JobError> {
            Ok(format!("done {} sent={}", self.pdf, self.sent))
        }
    }

    impl StepInput for Finish {
        type Input = (bool, String);
        const FIELDS: &'static [&'static str] = &["sent", "pdf"];
    }

    /// Releases `reservation` (the compensation of `Reserve`); returns it.
    #[derive(Debug, Serialize, Deserialize)]
    pub(crate) struct Unreserve {
        pub(crate) reservation: u64,
    }

    impl Job for Unreserve {
        const NAME: &'static str = "conformance.orders.unreserve";
        type Output = u64;
        fn options() -> JobOptions {
            options(3, FAST)
        }
        async fn run(self, _: JobContext, _: StateMap) -> Result<u64, JobError> {
            Ok(self.reservation)
        }
    }

    impl StepInput for Unreserve {
        type Input = u64;
        const FIELDS: &'static [&'static str] = &["reservation"];
    }
}
