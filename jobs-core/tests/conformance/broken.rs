//! Deliberately broken backends: the suite must fail on each, or its checks prove nothing.
//!
//! Each wraps a [`MemoryBackend`] and gets one behaviour wrong; without a flaw the wrapper
//! passes the same checks, so a failure is the flaw's doing.

use std::any::Any;

use async_trait::async_trait;
use jobs_core::testing::{checks, run};
use jobs_core::*;

/// What the wrapped memory backend gets wrong.
#[derive(Clone, Copy, Debug)]
enum Flaw {
    /// Nothing: the wrapper as it should be.
    None,
    /// Accepts completions whatever their lease token.
    NoFencing,
    /// Hands out ready jobs newest first.
    Lifo,
    /// Forgets the errors of failed attempts but the first.
    ForgetsErrors,
    /// Reads every stored error back as retryable, without its source chain (as a store that
    /// keeps only the message would).
    ForgetsErrorKinds,
    /// Never rescues lapsed leases.
    NeverRescues,
    /// Hands jobs back at their old `run_at` even when asked to snooze them.
    IgnoresReleaseRunAt,
    /// Examines every matching job in one bulk call, whatever the limit, and names no cursor.
    UnboundedManage,
    /// Lists jobs whatever their tags.
    IgnoresTagFilter,
    /// Lists workers whose heartbeat expired.
    WorkersNeverExpire,
    /// Fetches jobs of every name, whatever names the fetch gives.
    IgnoresNames,
    /// Fetches jobs of the names given at every version, however new.
    IgnoresVersions,
    /// Stores every job at version 1.
    ForgetsVersions,
    /// Never names a worker gone.
    SeesNoneGone,
    /// Publishes no events.
    Mute,
    /// Forgets that queues were paused.
    NeverPauses,
    /// Fetches as if no queue had limits.
    IgnoresFlow,
    /// Counts the worker's ended leases as running.
    CountsEndedLeases,
    /// Leaves a job named by an ended lease out of the counts, whatever the lease's token.
    TrustsEndedLeases,
    /// Stores jobs without their key limits.
    ForgetsKeyLimits,
    /// Stores limits without their maximum depth.
    Unbounded,
    /// Stores every job, throttled and debounced ones too.
    NeverCoalesces,
    /// Stores workflow steps ready at once, without waiting for their inputs.
    StepsNeverWait,
    /// Stores workflow steps without what their death does (no compensation, no cancel).
    ForgetsDeadEffects,
}

struct Broken {
    inner: MemoryBackend,
    flaw: Flaw,
}

impl Broken {
    /// `record` as this backend reads it back.
    fn distort(&self, record: &mut JobRecord) {
        match self.flaw {
            Flaw::ForgetsErrors => record.errors.truncate(1),
            Flaw::ForgetsErrorKinds => {
                for error in &mut record.errors {
                    error.kind = ErrorKind::Retryable;
                    error.chain.clear();
                }
            }
            _ => {}
        }
    }

    /// Fetches one job, the newest ready one: takes every ready job, keeps the newest, hands
    /// the rest back.
    async fn fetch_newest(&self, p: FetchParams) -> Result<Vec<LeasedJob>, Error> {
        let mut got = self
            .inner
            .fetch(FetchParams {
                ended: Vec::new(),
                known: None,
                limit: usize::MAX,
                ..p.clone()
            })
            .await?;
        let Some(newest) = got.iter().map(|j| j.record.id).max() else {
            return Ok(vec![]);
        };
        let keep = got.iter().position(|j| j.record.id == newest).unwrap_or(0);
        let chosen = got.remove(keep);
        let rest = got
            .iter()
            .map(|j| Release {
                lease: j.lease(),
                run_at: None,
            })
            .collect();
        self.inner
            .release(ReleaseParams {
                items: rest,
                now: p.now,
            })
            .await?;
        Ok(vec![chosen])
    }
}

#[async_trait]
impl Backend for Broken {
    async fn enqueue(&self, mut p: EnqueueParams) -> Result<Vec<Enqueued>, Error> {
        for job in &mut p.jobs {
            match self.flaw {
                Flaw::ForgetsKeyLimits => job.key_limits = None,
                Flaw::NeverCoalesces => job.coalesce = None,
                Flaw::ForgetsVersions => job.version = 1,
                Flaw::StepsNeverWait => {
                    if let Some(step) = job.step.as_mut() {
                        step.slots = 0;
                    }
                }
                Flaw::ForgetsDeadEffects => {
                    if let Some(step) = job.step.as_mut() {
                        step.on_dead.clear();
                    }
                }
                _ => {}
            }
        }
        self.inner.enqueue(p).await
    }
    async fn enqueue_cron(&self, p: CronTickParams) -> Result<Option<JobId>, Error> {
        self.inner.enqueue_cron(p).await
    }
    async fn fetch(&self, p: FetchParams) -> Result<Vec<LeasedJob>, Error> {
        match self.flaw {
            Flaw::Lifo => self.fetch_newest(p).await,
            Flaw::IgnoresNames => self.inner.fetch(FetchParams { known: None, ..p }).await,
            Flaw::IgnoresVersions => {
                let known = p.known.clone().map(|known| {
                    let newest = |k: KnownJob| KnownJob {
                        version: u32::MAX,
                        ..k
                    };
                    known.into_iter().map(newest).collect()
                });
                self.inner.fetch(FetchParams { known, ..p }).await
            }
            Flaw::IgnoresFlow => {
                let flow = Vec::new();
                self.inner.fetch(FetchParams { flow, ..p }).await
            }
            Flaw::CountsEndedLeases => {
                let ended = Vec::new();
                self.inner.fetch(FetchParams { ended, ..p }).await
            }
            Flaw::TrustsEndedLeases => {
                let mut p = p;
                for e in &mut p.ended {
                    let current = self.inner.read(ReadParams { id: e.lease.id }).await?;
                    if let Some(lease) = current.and_then(|r| r.lease) {
                        e.lease.token = lease.token;
                    }
                }
                self.inner.fetch(p).await
            }
            _ => self.inner.fetch(p).await,
        }
    }
    async fn complete(&self, mut p: CompleteParams) -> Result<Vec<bool>, Error> {
        if let Flaw::NoFencing = self.flaw {
            for item in &mut p.items {
                let id = item.lease.id;
                let current = self.inner.read(ReadParams { id }).await?;
                if let Some(lease) = current.and_then(|r| r.lease) {
                    item.lease.token = lease.token;
                }
            }
        }
        self.inner.complete(p).await
    }
    async fn fail(&self, p: FailParams) -> Result<Vec<bool>, Error> {
        self.inner.fail(p).await
    }
    async fn release(&self, mut p: ReleaseParams) -> Result<Vec<bool>, Error> {
        if let Flaw::IgnoresReleaseRunAt = self.flaw {
            for item in &mut p.items {
                item.run_at = None;
            }
        }
        self.inner.release(p).await
    }
    async fn renew(&self, p: RenewParams) -> Result<Vec<bool>, Error> {
        self.inner.renew(p).await
    }
    fn reserves(&self) -> bool {
        self.inner.reserves()
    }
    fn max_fetch(&self) -> usize {
        self.inner.max_fetch()
    }
    async fn hold_places(&self, p: PlacesParams) -> Result<(), Error> {
        self.inner.hold_places(p).await
    }
    async fn progress(&self, p: ProgressParams) -> Result<bool, Error> {
        self.inner.progress(p).await
    }
    async fn read(&self, p: ReadParams) -> Result<Option<JobRecord>, Error> {
        let mut found = self.inner.read(p).await?;
        if let Some(record) = found.as_mut() {
            self.distort(record);
        }
        Ok(found)
    }
    async fn list(&self, mut p: ListParams) -> Result<Vec<JobRecord>, Error> {
        if let Flaw::IgnoresTagFilter = self.flaw {
            p.filter.tag = None;
        }
        let mut found = self.inner.list(p).await?;
        for record in &mut found {
            self.distort(record);
        }
        Ok(found)
    }
    async fn manage(&self, mut p: ManageParams) -> Result<Managed, Error> {
        if let (Flaw::UnboundedManage, Target::Matching { .. }) = (self.flaw, &p.target) {
            p.limit = usize::MAX;
        }
        self.inner.manage(p).await
    }
    async fn rescue(&self, p: RescueParams) -> Result<Vec<JobId>, Error> {
        match self.flaw {
            Flaw::NeverRescues => Ok(vec![]),
            _ => self.inner.rescue(p).await,
        }
    }
    async fn prune(&self, p: PruneParams) -> Result<u64, Error> {
        self.inner.prune(p).await
    }
    async fn counts(&self, p: CountsParams) -> Result<QueueCounts, Error> {
        self.inner.counts(p).await
    }
    async fn queue_names(&self, p: QueueNamesParams) -> Result<Vec<String>, Error> {
        self.inner.queue_names(p).await
    }
    async fn heartbeat(&self, p: HeartbeatParams) -> Result<(), Error> {
        self.inner.heartbeat(p).await
    }
    async fn deregister(&self, p: DeregisterParams) -> Result<(), Error> {
        self.inner.deregister(p).await
    }
    async fn pause(&self, p: PauseParams) -> Result<(), Error> {
        self.inner.pause(p).await
    }
    async fn paused_queues(&self, p: PausedParams) -> Result<Vec<String>, Error> {
        match self.flaw {
            Flaw::NeverPauses => Ok(Vec::new()),
            _ => self.inner.paused_queues(p).await,
        }
    }
    async fn set_limits(&self, mut p: SetLimitsParams) -> Result<(), Error> {
        if let Flaw::Unbounded = self.flaw {
            p.limits.max_depth = None;
        }
        self.inner.set_limits(p).await
    }
    async fn flow(&self, p: FlowParams) -> Result<Vec<QueueFlow>, Error> {
        self.inner.flow(p).await
    }
    async fn finished_since(&self, p: FinishedParams) -> Result<u64, Error> {
        self.inner.finished_since(p).await
    }
    fn publish(&self, events: Vec<JobEvent>) {
        if !matches!(self.flaw, Flaw::Mute) {
            self.inner.publish(events)
        }
    }
    fn events_heard(&self) -> bool {
        self.inner.events_heard()
    }
    async fn events(&self, p: EventsParams) -> Result<EventStream, Error> {
        self.inner.events(p).await
    }
    async fn hold_liveness(&self, p: HoldParams) -> Result<Liveness, Error> {
        self.inner.hold_liveness(p).await
    }
    async fn gone_workers(&self, p: GoneParams) -> Result<Vec<String>, Error> {
        match self.flaw {
            Flaw::SeesNoneGone => Ok(Vec::new()),
            _ => self.inner.gone_workers(p).await,
        }
    }
    async fn live_workers(&self, mut p: WorkersParams) -> Result<Vec<WorkerInfo>, Error> {
        if let Flaw::WorkersNeverExpire = self.flaw {
            p.now = Timestamp::MIN_UTC;
        }
        self.inner.live_workers(p).await
    }
    async fn save_schedules(&self, p: SaveSchedulesParams) -> Result<(), Error> {
        self.inner.save_schedules(p).await
    }
    async fn stored_schedules(&self, p: SchedulesParams) -> Result<Vec<StoredSchedule>, Error> {
        self.inner.stored_schedules(p).await
    }
    async fn publish_types(&self, p: PublishTypesParams) -> Result<(), Error> {
        self.inner.publish_types(p).await
    }
    async fn job_types(&self, p: JobTypesParams) -> Result<Vec<PublishedType>, Error> {
        self.inner.job_types(p).await
    }
    async fn stored_versions(&self, p: StoredVersionsParams) -> Result<Vec<StoredVersion>, Error> {
        self.inner.stored_versions(p).await
    }
    async fn subscribe(&self, p: SubscribeParams) -> Result<Wakeup, Error> {
        self.inner.subscribe(p).await
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Runs `check` on a backend with `flaw` and says whether the check failed.
fn fails(flaw: Flaw, check: fn(AnyBackend) -> BoxFuture<()>) -> bool {
    let make = move || async move {
        Broken {
            inner: MemoryBackend::new(),
            flaw,
        }
    };
    std::panic::catch_unwind(|| run(make, check)).is_err()
}

/// One test per flaw, asserting that each of its checks fails on it, and one asserting that
/// every one of those checks passes on the wrapper without a flaw.
macro_rules! caught {
    ($($test:ident: $flaw:ident => $($check:ident),+;)*) => {
        $(
            #[test]
            fn $test() {
                $(
                    assert!(
                        fails(Flaw::$flaw, |b| Box::pin(checks::$check(b))),
                        "{} passed on a backend with the flaw {:?}",
                        stringify!($check),
                        Flaw::$flaw,
                    );
                )+
            }
        )*

        #[test]
        fn the_same_checks_pass_on_the_wrapper_without_a_flaw() {
            $($(
                assert!(
                    !fails(Flaw::None, |b| Box::pin(checks::$check(b))),
                    "{} failed on the sound wrapper",
                    stringify!($check),
                );
            )+)*
        }
    };
}

caught! {
    fencing_check_catches_a_backend_without_fencing: NoFencing =>
        lease_of_a_stale_holder_is_fenced;
    ordering_check_catches_lifo: Lifo =>
        fetch_by_priority_then_run_at_then_fifo;
    retry_check_catches_lost_errors: ForgetsErrors =>
        fail_retries_then_dies_with_every_error;
    error_checks_catch_lost_kinds_and_chains: ForgetsErrorKinds =>
        fail_stores_each_error_kind_and_chain,
        fail_dead_reason_tells_fatal_from_out_of_attempts;
    rescue_check_catches_a_backend_that_never_rescues: NeverRescues =>
        rescue_without_attempts_left_is_dead,
        rescue_records_lease_expired_and_keeps_the_job_place;
    snooze_check_catches_a_release_that_ignores_run_at: IgnoresReleaseRunAt =>
        release_with_run_at_snoozes_the_job;
    batch_check_catches_an_unbounded_bulk_call: UnboundedManage =>
        manage_by_filter_examines_a_bounded_batch;
    tag_check_catches_a_list_that_ignores_tags: IgnoresTagFilter =>
        list_filters_by_tag_across_queues,
        tags_forget_deleted_and_pruned_jobs;
    expiry_check_catches_workers_that_never_expire: WorkersNeverExpire =>
        workers_expire_without_heartbeats,
        workers_show_the_jobs_they_run;
    names_check_catches_a_fetch_that_ignores_names: IgnoresNames =>
        fetch_takes_only_the_names_given;
    version_check_catches_a_fetch_that_ignores_versions: IgnoresVersions =>
        versions_newer_than_known_stay_waiting;
    version_check_catches_a_store_that_forgets_versions: ForgetsVersions =>
        versions_are_stored_with_each_job,
        versions_stored_are_counted_for_waiting_and_running_jobs;
    pause_checks_catch_a_store_that_never_pauses: NeverPauses =>
        pause_marks_queues_until_resumed,
        worker_takes_nothing_from_a_paused_queue;
    event_checks_catch_a_store_that_publishes_nothing: Mute =>
        events_reach_the_subscribers_of_their_queue,
        worker_publishes_each_jobs_events;
    flow_checks_catch_a_fetch_that_ignores_limits: IgnoresFlow =>
        fetch_holds_a_queues_concurrency,
        fetch_holds_a_queues_rate,
        fetch_racing_holds_the_limits;
    ended_lease_checks_catch_a_fetch_that_counts_them: CountsEndedLeases =>
        fetch_leaves_ended_leases_out_of_a_queues_concurrency,
        fetch_leaves_ended_leases_out_of_a_keys_concurrency;
    ended_lease_checks_catch_a_fetch_that_trusts_stale_ones: TrustsEndedLeases =>
        fetch_leaves_ended_leases_out_of_a_queues_concurrency;
    key_checks_catch_a_store_that_forgets_key_limits: ForgetsKeyLimits =>
        flow_stores_limits_per_queue,
        fetch_holds_each_keys_limits;
    depth_checks_catch_an_unbounded_queue: Unbounded =>
        enqueue_refuses_beyond_max_depth,
        enqueue_racing_never_overfills;
    workflow_checks_catch_steps_that_never_wait: StepsNeverWait =>
        workflow_steps_wait_for_the_results_before_them,
        workflow_group_follow_up_waits_for_every_result;
    workflow_checks_catch_a_store_that_forgets_dead_effects: ForgetsDeadEffects =>
        workflow_dead_step_runs_the_compensation_and_cancels_the_rest,
        workflow_rescued_dead_step_runs_the_compensation,
        workflow_compensations_run_latest_first,
        worker_compensates_a_workflow_whose_step_dies;
    coalesce_checks_catch_a_store_that_never_coalesces: NeverCoalesces =>
        enqueue_throttles_to_the_first_job_of_a_window,
        enqueue_debounces_into_the_waiting_job;
    liveness_checks_catch_a_store_that_sees_no_death: SeesNoneGone =>
        liveness_ends_when_its_holder_lets_go,
        worker_reruns_jobs_of_a_gone_worker_at_once;
}
