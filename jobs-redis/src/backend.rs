//! `RedisBackend`: construction, the prefix, and the `Backend` impl that delegates to the
//! modules of each group of operations.

use std::any::Any;
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use jobs_core::{
    Backend, CompleteParams, CountsParams, CronTickParams, DeregisterParams, EnqueueParams,
    Enqueued, Error, FailParams, FetchParams, GoneParams, HeartbeatParams, HoldParams, JobId,
    JobRecord, LeasedJob, ListParams, Liveness, ManageParams, Managed, PlacesParams,
    ProgressParams, PruneParams, QueueCounts, QueueNamesParams, ReadParams, ReleaseParams,
    RenewParams, RescueParams, SaveSchedulesParams, SchedulesParams, StoredSchedule,
    SubscribeParams, Timestamp, WakeHub, Wakeup, WorkerInfo, WorkersParams,
};
use jobs_core::{EndDeliveriesParams, Relay};
use jobs_core::{
    EventHub, EventStream, EventsParams, FinishedParams, FlowParams, JobEvent, PauseParams,
    PausedParams, Publisher, QueueFlow, SetLimitsParams,
};
use jobs_core::{
    JobTypesParams, PublishTypesParams, PublishedType, StoredVersion, StoredVersionsParams,
};
use redis::{Client, Cmd, FromRedisValue, RedisError};
use tokio::sync::OnceCell;
use uuid::Uuid;

use crate::connect::{self, Conn, Connected};
use crate::deliveries::Deliveries;
use crate::events;
use crate::keys::{Keys, DEFAULT_PREFIX};
use crate::library;
use crate::listen::Listener;
use crate::marker::Layout;
use crate::options::{Options, Timeouts};
use crate::queues::KnownQueues;
use crate::record::micros;
use crate::scripts::Function;
use crate::streams::readers::Readers;

/// The arguments a script call has room for from the start: the call's own six and one job's
/// (see `record::push_job`), or a few jobs' lease writes.
const CALL_ARGS: usize = 32;
/// The bytes its arguments have room for from the start.
const CALL_BYTES: usize = 512;

/// A job store in Redis or a Redis Cluster. Clones share one connection.
///
/// ```no_run
/// # async fn demo() -> Result<(), jobs_core::Error> {
/// use jobs_redis::RedisBackend;
///
/// let backend = RedisBackend::connect("redis://127.0.0.1:6379/?prefix=shop").await?;
/// let cluster = RedisBackend::connect("redis+cluster://127.0.0.1:7000,127.0.0.1:7001").await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisBackend {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub conn: Conn,
    pub keys: Keys,
    pub channel: String,
    pub queues: KnownQueues,
    /// One client per server: the wake-up listener subscribes through them, and the liveness
    /// connection is made through the one of a single server.
    pub subscribers: Vec<Client>,
    wake: Listener<WakeHub>,
    events: Listener<EventHub>,
    publisher: Publisher,
    /// The relay of the channel on which this instance's idle workers get jobs straight away.
    deliveries: Arc<Deliveries>,
    delivery_channel: String,
    /// How this backend lays out the store.
    pub layout: Layout,
    /// Set once the store's layout was found to be this backend's (see [`marker`](crate::marker)).
    pub layout_checked: OnceCell<()>,
    /// The idle workers' blocked reads, on the streams layout.
    pub readers: Readers,
}

impl RedisBackend {
    /// Connects to the server `url` names: `redis://[user:password@]host[:port][/db]` (or
    /// `redis+unix:///path`) for one server, `redis+cluster://[user:password@]host:port,host:port`
    /// for a cluster, with the options of the [crate docs](crate#url-options) in its query.
    ///
    /// Fails with [`Error::Invalid`] when the URL or an option is bad, or when the store under
    /// the prefix is laid out in a way this release does not read (see the
    /// [crate docs](crate#storage)), and with [`Error::Connect`] (the password hidden) when no
    /// server answers.
    pub async fn connect(url: &str) -> Result<Self, Error> {
        let options = Options::parse(url)?;
        let connected = connect::open(&options.driver_url, url, options.timeouts).await?;
        let backend = Self::with_keys(
            connected.conn,
            connected.subscribers,
            options.keys,
            options.layout,
        );
        backend.check_layout().await?;
        Ok(backend)
    }

    /// Connects to a Redis Cluster through the URLs of any of its nodes (without options: give
    /// them to [`connect`](Self::connect) in a `redis+cluster://` URL).
    pub async fn connect_cluster<S: AsRef<str>>(urls: &[S]) -> Result<Self, Error> {
        let urls: Vec<String> = urls.iter().map(|u| u.as_ref().to_string()).collect();
        let target = urls.join(",");
        Ok(Self::new(
            connect::open_cluster(&urls, &target, Timeouts::default()).await?,
        ))
    }

    /// Connects through a configured client of one server.
    pub async fn from_client(client: Client) -> Result<Self, Error> {
        let target = client.get_connection_info().addr().to_string();
        Ok(Self::new(
            connect::open_client(client, &target, Timeouts::default()).await?,
        ))
    }

    fn new(connected: Connected) -> Self {
        Self::with_keys(
            connected.conn,
            connected.subscribers,
            Keys::new(DEFAULT_PREFIX).expect("valid"),
            Layout::Hash,
        )
    }

    fn with_keys(conn: Conn, subscribers: Vec<Client>, keys: Keys, layout: Layout) -> Self {
        let channel = keys.channel();
        let delivery_channel = keys.deliveries(&Uuid::new_v4().simple().to_string());
        let inner = Arc::new_cyclic(|inner: &Weak<Inner>| {
            let deliveries = Arc::new(Deliveries::new(inner.clone()));
            let relay: Arc<dyn Relay> = deliveries.clone();
            Inner {
                publisher: events::publisher(conn.clone(), keys.events()),
                conn,
                queues: KnownQueues::default(),
                wake: Listener::new(subscribers.clone(), channel.clone())
                    .with(delivery_channel.clone(), relay),
                events: Listener::new(subscribers.clone(), keys.events()),
                channel,
                subscribers,
                keys,
                deliveries,
                delivery_channel,
                layout,
                layout_checked: OnceCell::new(),
                readers: Readers::default(),
            }
        });
        RedisBackend { inner }
    }

    /// The backend of `inner`.
    pub(crate) fn of(inner: Arc<Inner>) -> Self {
        RedisBackend { inner }
    }

    /// This backend's state, held without keeping it alive.
    pub(crate) fn downgrade(&self) -> Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    /// The same connection under another key prefix (default `jobs`, or the URL's `prefix`), so
    /// that several applications share one Redis. A prefix containing `{` or `}` is refused: braces would
    /// change the hash tags that keep each queue in one cluster slot.
    pub fn prefix(self, prefix: &str) -> Result<Self, Error> {
        let keys = Keys::new(prefix)?;
        Ok(Self::with_keys(
            self.inner.conn.clone(),
            self.inner.subscribers.clone(),
            keys,
            self.inner.layout,
        ))
    }

    /// The key prefix.
    pub fn key_prefix(&self) -> &str {
        self.inner.keys.prefix()
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// How this backend lays out the store.
    pub(crate) fn layout(&self) -> Layout {
        self.inner.layout
    }

    /// The script of this backend's layout: `hash`, or its counterpart `streams`.
    pub(crate) fn script(
        &self,
        hash: &'static Function,
        streams: &'static Function,
    ) -> &'static Function {
        match self.layout() {
            Layout::Hash => hash,
            Layout::Streams => streams,
        }
    }

    /// The hub of the workers' wake-ups and deliveries.
    pub(crate) fn wake_hub(&self) -> &WakeHub {
        self.inner.wake.hub()
    }

    /// The relay of this instance's delivery channel.
    pub(crate) fn deliveries(&self) -> &Deliveries {
        &self.inner.deliveries
    }

    /// The channel on which this instance's idle workers get jobs straight away.
    pub(crate) fn delivery_channel(&self) -> &str {
        &self.inner.delivery_channel
    }

    /// Whether this instance hears its delivery channel now: while it reconnects, its idle
    /// workers offer nothing, since a job delivered then would be lost until its lease lapsed.
    pub(crate) fn hears_deliveries(&self) -> bool {
        self.inner.wake.is_live()
    }

    /// Whether the connection is to a Redis Cluster (each queue in its own slot).
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.inner.conn, Conn::Cluster(_))
    }

    /// A call of `script` on `queue`: the queue's key base and the shared arguments (wake-up
    /// channel, queue name, now), ready for the script's own.
    pub(crate) fn invocation(
        &self,
        script: &'static Function,
        queue: &str,
        now: Timestamp,
    ) -> ScriptCall {
        self.call(script, self.inner.keys.queue(queue), queue, micros(now))
    }

    /// A call of a script on `queue` that does not depend on the time (it gets 0 as now).
    pub(crate) fn timeless_invocation(&self, script: &'static Function, queue: &str) -> ScriptCall {
        self.call(script, self.inner.keys.queue(queue), queue, 0)
    }

    /// A call of a presence script, on the prefix's own keys (`{prefix}:`); one that does not
    /// depend on the time gets 0 as now.
    pub(crate) fn global_invocation(
        &self,
        script: &'static Function,
        now: Option<Timestamp>,
    ) -> ScriptCall {
        self.call(script, self.inner.keys.global(), "", now.map_or(0, micros))
    }

    fn call(&self, script: &'static Function, base: String, queue: &str, now: i64) -> ScriptCall {
        // Room for a call on one job or a few, so that its arguments do not grow the buffers
        // a few bytes at a time; a batch's call grows them by doubling.
        let mut cmd = Cmd::with_capacity(CALL_ARGS, CALL_BYTES);
        cmd.arg("FCALL")
            .arg(&script.name)
            .arg(1)
            .arg(base)
            .arg(&self.inner.channel)
            .arg(queue)
            .arg(now);
        ScriptCall { cmd }
    }

    /// Runs a script's function, loading the library first if the server lacks it (with the
    /// arguments packed in one buffer as they were added).
    pub(crate) async fn run<T: FromRedisValue>(&self, call: &ScriptCall) -> Result<T, Error> {
        self.check_layout().await?;
        self.send(call).await
    }

    /// [`run`](Self::run), before the store's layout is checked.
    pub(crate) async fn send<T: FromRedisValue>(&self, call: &ScriptCall) -> Result<T, Error> {
        self.send_raw(call).await.map_err(library::explain)
    }

    /// [`send`](Self::send), answering the server's own error, for a caller that tells one
    /// apart (see [`library::explain`] for the others).
    pub(crate) async fn send_raw<T: FromRedisValue>(
        &self,
        call: &ScriptCall,
    ) -> Result<T, RedisError> {
        let mut conn = self.inner.conn.clone();
        match call.cmd.query_async(&mut conn).await {
            Err(e) if library::is_missing(&e) => {
                library::load(&mut conn).await?;
                call.cmd.query_async(&mut conn).await
            }
            answer => answer,
        }
    }

    /// Runs one command.
    pub(crate) async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, Error> {
        self.check_layout().await?;
        cmd.query_async(&mut self.inner.conn.clone())
            .await
            .map_err(Error::backend)
    }

    /// Runs a pipeline of commands on one slot.
    pub(crate) async fn query_pipe<T: FromRedisValue>(
        &self,
        pipe: &redis::Pipeline,
    ) -> Result<T, Error> {
        self.check_layout().await?;
        pipe.query_async(&mut self.inner.conn.clone())
            .await
            .map_err(Error::backend)
    }
}

/// A script call being built: `FCALL`, the script's function, its key and arguments. Arguments
/// are added with [`Cmd::arg`] through `Deref`.
pub(crate) struct ScriptCall {
    cmd: Cmd,
}

impl std::ops::Deref for ScriptCall {
    type Target = Cmd;

    fn deref(&self) -> &Cmd {
        &self.cmd
    }
}

impl std::ops::DerefMut for ScriptCall {
    fn deref_mut(&mut self) -> &mut Cmd {
        &mut self.cmd
    }
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.inner.conn {
            Conn::Single(_) => "server",
            Conn::Cluster(_) => "cluster",
        };
        f.debug_struct("RedisBackend")
            .field("prefix", &self.inner.keys.prefix())
            .field("kind", &kind)
            .finish()
    }
}

#[async_trait]
impl Backend for RedisBackend {
    async fn enqueue(&self, p: EnqueueParams) -> Result<Vec<Enqueued>, Error> {
        self.enqueue_batch(p).await
    }

    async fn enqueue_cron(&self, p: CronTickParams) -> Result<Option<JobId>, Error> {
        self.enqueue_tick(p).await
    }

    async fn fetch(&self, p: FetchParams) -> Result<Vec<LeasedJob>, Error> {
        match self.layout() {
            Layout::Hash => self.fetch_jobs(p).await,
            Layout::Streams => self.fetch_entries(p).await,
        }
    }

    async fn complete(&self, p: CompleteParams) -> Result<Vec<bool>, Error> {
        self.complete_jobs(p).await
    }

    fn reserves(&self) -> bool {
        true
    }

    async fn hold_places(&self, p: PlacesParams) -> Result<(), Error> {
        self.store_places(p).await
    }

    async fn fail(&self, p: FailParams) -> Result<Vec<bool>, Error> {
        self.fail_jobs(p).await
    }

    async fn release(&self, p: ReleaseParams) -> Result<Vec<bool>, Error> {
        self.release_jobs(p).await
    }

    async fn renew(&self, p: RenewParams) -> Result<Vec<bool>, Error> {
        self.renew_leases(p).await
    }

    async fn progress(&self, p: ProgressParams) -> Result<bool, Error> {
        self.record_progress(p).await
    }

    async fn read(&self, p: ReadParams) -> Result<Option<JobRecord>, Error> {
        match self.layout() {
            Layout::Hash => self.read_one(p).await,
            Layout::Streams => self.read_entry(p).await,
        }
    }

    async fn list(&self, p: ListParams) -> Result<Vec<JobRecord>, Error> {
        self.list_matching(p).await
    }

    async fn manage(&self, p: ManageParams) -> Result<Managed, Error> {
        self.manage_jobs(p).await
    }

    async fn rescue(&self, p: RescueParams) -> Result<Vec<JobId>, Error> {
        self.rescue_jobs(p).await
    }

    async fn prune(&self, p: PruneParams) -> Result<u64, Error> {
        self.prune_finished(p).await
    }

    async fn counts(&self, p: CountsParams) -> Result<QueueCounts, Error> {
        self.count_jobs(p).await
    }

    async fn queue_names(&self, _: QueueNamesParams) -> Result<Vec<String>, Error> {
        self.registered_queues().await
    }

    async fn pause(&self, p: PauseParams) -> Result<(), Error> {
        self.set_paused(p).await
    }

    async fn paused_queues(&self, _: PausedParams) -> Result<Vec<String>, Error> {
        self.read_paused().await
    }

    async fn set_limits(&self, p: SetLimitsParams) -> Result<(), Error> {
        self.store_limits(p).await
    }

    async fn flow(&self, _: FlowParams) -> Result<Vec<QueueFlow>, Error> {
        self.read_flow().await
    }

    async fn finished_since(&self, p: FinishedParams) -> Result<u64, Error> {
        self.count_finished(p).await
    }

    async fn heartbeat(&self, p: HeartbeatParams) -> Result<(), Error> {
        self.record_heartbeat(p).await
    }

    async fn deregister(&self, p: DeregisterParams) -> Result<(), Error> {
        self.forget_worker(p).await
    }

    async fn hold_liveness(&self, p: HoldParams) -> Result<Liveness, Error> {
        Ok(self.hold(p.worker))
    }

    async fn gone_workers(&self, _: GoneParams) -> Result<Vec<String>, Error> {
        self.gone().await
    }

    async fn live_workers(&self, p: WorkersParams) -> Result<Vec<WorkerInfo>, Error> {
        self.read_workers(p).await
    }

    async fn save_schedules(&self, p: SaveSchedulesParams) -> Result<(), Error> {
        self.record_schedules(p).await
    }

    async fn stored_schedules(&self, _: SchedulesParams) -> Result<Vec<StoredSchedule>, Error> {
        self.read_schedules().await
    }

    async fn publish_types(&self, p: PublishTypesParams) -> Result<(), Error> {
        self.store_types(p).await
    }

    async fn job_types(&self, p: JobTypesParams) -> Result<Vec<PublishedType>, Error> {
        self.read_types(p).await
    }

    async fn stored_versions(&self, p: StoredVersionsParams) -> Result<Vec<StoredVersion>, Error> {
        self.count_versions(p).await
    }

    async fn subscribe(&self, p: SubscribeParams) -> Result<Wakeup, Error> {
        self.inner
            .queues
            .remember(p.queues.iter().map(String::as_str));
        let wakeup = self.wake_hub().subscribe(&p.queues, p.worker.as_deref());
        self.inner.wake.ready().await?;
        Ok(wakeup)
    }

    async fn end_deliveries(&self, p: EndDeliveriesParams) -> Result<(), Error> {
        match self.layout() {
            Layout::Hash => self.end_deliveries_to(p).await,
            Layout::Streams => {
                self.end_wait(&p.worker).await;
                Ok(())
            }
        }
    }

    fn publish(&self, events: Vec<JobEvent>) {
        self.inner.publisher.publish(events);
    }

    fn events_heard(&self) -> bool {
        self.inner.publisher.is_heard()
    }

    async fn events(&self, p: EventsParams) -> Result<EventStream, Error> {
        let stream = self.inner.events.hub().subscribe(p.queues);
        self.inner.events.ready().await?;
        Ok(stream)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
