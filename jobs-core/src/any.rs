//! `AnyBackend`: one type for whichever backend a URL named.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use crate::backend::*;
use crate::catalog::{PublishedType, StoredVersion};
use crate::event::{EventStream, JobEvent};
use crate::flow::QueueFlow;
use crate::liveness::Liveness;
use crate::model::{Enqueued, JobId, JobRecord, LeasedJob, QueueCounts};
use crate::presence::{StoredSchedule, WorkerInfo};
use crate::wake::Wakeup;
use crate::Error;

/// A shared handle to any backend, itself a [`Backend`]. Cheap to clone.
///
/// ```
/// use jobs_core::{AnyBackend, MemoryBackend};
///
/// let backend = AnyBackend::new(MemoryBackend::new());
/// assert!(backend.downcast_ref::<MemoryBackend>().is_some());
/// ```
#[derive(Clone)]
pub struct AnyBackend(Arc<dyn Backend>);

impl AnyBackend {
    /// Wraps a backend (an `AnyBackend` is not wrapped twice).
    pub fn new<B: Backend>(backend: B) -> Self {
        let any: &dyn Any = &backend;
        match any.downcast_ref::<AnyBackend>() {
            Some(inner) => inner.clone(),
            None => AnyBackend(Arc::new(backend)),
        }
    }

    /// The concrete backend, if it is a `B`.
    pub fn downcast_ref<B: Backend>(&self) -> Option<&B> {
        self.0.as_any().downcast_ref::<B>()
    }
}

impl fmt::Debug for AnyBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AnyBackend")
    }
}

#[async_trait]
impl Backend for AnyBackend {
    async fn enqueue(&self, p: EnqueueParams) -> Result<Vec<Enqueued>, Error> {
        self.0.enqueue(p).await
    }
    async fn enqueue_cron(&self, p: CronTickParams) -> Result<Option<JobId>, Error> {
        self.0.enqueue_cron(p).await
    }
    async fn fetch(&self, p: FetchParams) -> Result<Vec<LeasedJob>, Error> {
        self.0.fetch(p).await
    }
    async fn complete(&self, p: CompleteParams) -> Result<Vec<bool>, Error> {
        self.0.complete(p).await
    }
    async fn fail(&self, p: FailParams) -> Result<Vec<bool>, Error> {
        self.0.fail(p).await
    }
    async fn release(&self, p: ReleaseParams) -> Result<Vec<bool>, Error> {
        self.0.release(p).await
    }
    async fn renew(&self, p: RenewParams) -> Result<Vec<bool>, Error> {
        self.0.renew(p).await
    }
    fn reserves(&self) -> bool {
        self.0.reserves()
    }
    fn max_fetch(&self) -> usize {
        self.0.max_fetch()
    }
    async fn hold_places(&self, p: PlacesParams) -> Result<(), Error> {
        self.0.hold_places(p).await
    }
    async fn progress(&self, p: ProgressParams) -> Result<bool, Error> {
        self.0.progress(p).await
    }
    async fn read(&self, p: ReadParams) -> Result<Option<JobRecord>, Error> {
        self.0.read(p).await
    }
    async fn list(&self, p: ListParams) -> Result<Vec<JobRecord>, Error> {
        self.0.list(p).await
    }
    async fn manage(&self, p: ManageParams) -> Result<Managed, Error> {
        self.0.manage(p).await
    }
    async fn rescue(&self, p: RescueParams) -> Result<Vec<JobId>, Error> {
        self.0.rescue(p).await
    }
    async fn prune(&self, p: PruneParams) -> Result<u64, Error> {
        self.0.prune(p).await
    }
    async fn counts(&self, p: CountsParams) -> Result<QueueCounts, Error> {
        self.0.counts(p).await
    }
    async fn queue_names(&self, p: QueueNamesParams) -> Result<Vec<String>, Error> {
        self.0.queue_names(p).await
    }
    async fn pause(&self, p: PauseParams) -> Result<(), Error> {
        self.0.pause(p).await
    }
    async fn paused_queues(&self, p: PausedParams) -> Result<Vec<String>, Error> {
        self.0.paused_queues(p).await
    }
    async fn set_limits(&self, p: SetLimitsParams) -> Result<(), Error> {
        self.0.set_limits(p).await
    }
    async fn flow(&self, p: FlowParams) -> Result<Vec<QueueFlow>, Error> {
        self.0.flow(p).await
    }
    async fn finished_since(&self, p: FinishedParams) -> Result<u64, Error> {
        self.0.finished_since(p).await
    }
    async fn heartbeat(&self, p: HeartbeatParams) -> Result<(), Error> {
        self.0.heartbeat(p).await
    }
    async fn deregister(&self, p: DeregisterParams) -> Result<(), Error> {
        self.0.deregister(p).await
    }
    async fn hold_liveness(&self, p: HoldParams) -> Result<Liveness, Error> {
        self.0.hold_liveness(p).await
    }
    async fn gone_workers(&self, p: GoneParams) -> Result<Vec<String>, Error> {
        self.0.gone_workers(p).await
    }
    async fn live_workers(&self, p: WorkersParams) -> Result<Vec<WorkerInfo>, Error> {
        self.0.live_workers(p).await
    }
    async fn save_schedules(&self, p: SaveSchedulesParams) -> Result<(), Error> {
        self.0.save_schedules(p).await
    }
    async fn stored_schedules(&self, p: SchedulesParams) -> Result<Vec<StoredSchedule>, Error> {
        self.0.stored_schedules(p).await
    }
    async fn publish_types(&self, p: PublishTypesParams) -> Result<(), Error> {
        self.0.publish_types(p).await
    }
    async fn job_types(&self, p: JobTypesParams) -> Result<Vec<PublishedType>, Error> {
        self.0.job_types(p).await
    }
    async fn stored_versions(&self, p: StoredVersionsParams) -> Result<Vec<StoredVersion>, Error> {
        self.0.stored_versions(p).await
    }
    async fn subscribe(&self, p: SubscribeParams) -> Result<Wakeup, Error> {
        self.0.subscribe(p).await
    }
    async fn end_deliveries(&self, p: EndDeliveriesParams) -> Result<(), Error> {
        self.0.end_deliveries(p).await
    }
    fn publish(&self, events: Vec<JobEvent>) {
        self.0.publish(events)
    }
    fn events_heard(&self) -> bool {
        self.0.events_heard()
    }
    async fn events(&self, p: EventsParams) -> Result<EventStream, Error> {
        self.0.events(p).await
    }
    fn as_any(&self) -> &dyn Any {
        self.0.as_any()
    }
}
