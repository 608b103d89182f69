//! `PgBackend`: the [`Backend`] over a PostgreSQL pool, one schema.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use jobs_core::{
    Backend, CompleteParams, CountsParams, CronTickParams, DeregisterParams, EndDeliveriesParams,
    EnqueueParams, Enqueued, Error, FailParams, FetchParams, GoneParams, HeartbeatParams,
    HoldParams, JobId, JobRecord, LeasedJob, ListParams, Liveness, ManageParams, Managed,
    ProgressParams, PruneParams, QueueCounts, QueueNamesParams, ReadParams, ReleaseParams,
    RenewParams, RescueParams, SaveSchedulesParams, SchedulesParams, StoredSchedule,
    SubscribeParams, WakeHub, Wakeup, WorkerInfo, WorkersParams,
};
use jobs_core::{
    EventHub, EventStream, EventsParams, FinishedParams, FlowParams, JobEvent, PauseParams,
    PausedParams, PlacesParams, Publisher, QueueFlow, Relay, SetLimitsParams,
};
use jobs_core::{
    JobTypesParams, PublishTypesParams, PublishedType, StoredVersion, StoredVersionsParams,
};
use sqlx::PgPool;
use tokio::sync::Mutex;

use crate::enqueue::Wake;
use crate::error::db;
use crate::listen::{self, Listening};
use crate::offers::Deliveries;
use crate::pools::{self, Registration};
use crate::renewals::Renewals;
use crate::schema::{Schema, DEFAULT_SCHEMA};
use crate::sql::Sql;
use crate::{
    catalog, enqueue, events, fetch, flow, liveness, maintenance, manage, migrate, notifier,
    presence, queues, reads, writes,
};

/// A job store in PostgreSQL. Cheap to clone: clones share the pool and the listener.
///
/// ```no_run
/// # async fn demo() -> Result<(), jobs_core::Error> {
/// use jobs_postgres::PgBackend;
///
/// // A pool of its own, the schema `jobs`, migrated:
/// let backend = PgBackend::connect("postgres://postgres@127.0.0.1/app").await?;
///
/// // Or the application's pool and a schema of its choosing:
/// let pool = sqlx::PgPool::connect("postgres://postgres@127.0.0.1/app").await.unwrap();
/// let backend = PgBackend::from_pool(pool).schema("background")?;
/// backend.migrate().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PgBackend {
    inner: Arc<Inner>,
    /// Whether the worker's batched completions wait for their WAL flush (see
    /// [`durable_completions`](Self::durable_completions)).
    durable_completions: bool,
}

struct Inner {
    pool: PgPool,
    sql: Arc<Sql>,
    hub: Arc<WakeHub>,
    /// The relay of this instance's delivery channel, and its workers' offers.
    deliveries: Arc<Deliveries>,
    /// The LISTEN task of wake-ups and deliveries, started by the first `subscribe`.
    listening: Mutex<Option<Listening>>,
    events: Arc<EventHub>,
    /// The LISTEN task of job events, started by the first `events`.
    hearing: Mutex<Option<Listening>>,
    publisher: Publisher,
    /// The connection lease renewals take, beside the pool.
    renewals: Arc<Renewals>,
    /// Tells bare pools and connections this backend's schema.
    _registration: Registration,
}

impl PgBackend {
    /// A backend over `pool` in the schema `jobs`. Does no I/O: call
    /// [`migrate`](Self::migrate) before first use (or use [`connect`](Self::connect)).
    ///
    /// The pool's sessions must run at READ COMMITTED, PostgreSQL's default isolation: a fetch
    /// under a queue's limits counts the leases the fetch before it committed, which a
    /// REPEATABLE READ snapshot taken before that commit would not see. Where a server,
    /// database or role sets a stricter default, give the pool's connect options
    /// `.options([("default_transaction_isolation", r"read\ committed")])`, as
    /// [`connect`](Self::connect) does.
    pub fn from_pool(pool: PgPool) -> Self {
        let schema = Schema::new(DEFAULT_SCHEMA).expect("the default schema is valid");
        Self::with(pool, schema)
    }

    /// A backend over `pool` in `schema`, with a connection of its own for lease renewals.
    pub(crate) fn with(pool: PgPool, schema: Schema) -> Self {
        let renewals = Arc::new(Renewals::beside(&pool));
        Self::with_renewals(pool, schema, renewals)
    }

    /// A backend over `pool` in `schema`, registered so that bare pools and connections know
    /// its schema (see [the rule](crate#enqueueing-in-a-transaction)), renewing leases on
    /// `renewals`.
    fn with_renewals(pool: PgPool, schema: Schema, renewals: Arc<Renewals>) -> Self {
        let sql = Arc::new(Sql::new(schema));
        let hub = Arc::<WakeHub>::default();
        PgBackend {
            inner: Arc::new(Inner {
                _registration: pools::register(&pool, &sql),
                publisher: events::publisher(pool.clone(), sql.events_channel()),
                deliveries: Arc::new(Deliveries::new(pool.clone(), sql.clone(), hub.clone())),
                pool,
                sql,
                hub,
                listening: Mutex::new(None),
                events: Arc::default(),
                hearing: Mutex::new(None),
                renewals,
            }),
            durable_completions: false,
        }
    }

    /// The same pool, with the tables in schema `name` (default `jobs`).
    ///
    /// The name must be a plain identifier — lowercase ASCII letters, digits and `_`, 1 to 63
    /// characters, not starting with a digit or `pg_` — else [`Error::Invalid`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use jobs_postgres::PgBackend;
    ///
    /// let pool = sqlx::PgPool::connect_lazy("postgres://localhost/app").unwrap();
    /// assert!(PgBackend::from_pool(pool.clone()).schema("tenant_7").is_ok());
    /// assert!(PgBackend::from_pool(pool).schema("x; DROP TABLE jobs").is_err());
    /// # });
    /// ```
    pub fn schema(self, name: &str) -> Result<Self, Error> {
        let schema = Schema::new(name)?;
        let (pool, renewals) = (&self.inner.pool, &self.inner.renewals);
        Ok(Self::with_renewals(pool.clone(), schema, renewals.clone())
            .durable_completions(self.durable_completions))
    }

    /// Whether the worker's batched completions commit synchronously (default `false`; the
    /// URL option `durable_completions` of [`connect`](Self::connect)).
    ///
    /// By default a batch of completions commits without waiting for its WAL flush
    /// (`synchronous_commit = off` for that transaction alone), so the worker does not wait
    /// for an fsync per batch. A server that crashes before the next flush (the next
    /// synchronous commit on the server, or the WAL writer within a fraction of a second)
    /// rolls those completions back: their jobs are `running` again under leases nobody
    /// renews, are rescued when the leases lapse, and run again, as at-least-once delivery
    /// allows. No enqueue can be lost that way, and no lease is handed out twice.
    ///
    /// With `true`, completions commit with the session's own `synchronous_commit` (`on`
    /// unless the server or the URL's `options` say otherwise): an acknowledged completion
    /// survives a crash, and each batch waits for its flush. A handler's
    /// [`transaction`](crate::transaction) always commits with the session's setting,
    /// whatever this says.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), jobs_core::Error> {
    /// use jobs_postgres::PgBackend;
    ///
    /// let url = "postgres://postgres@127.0.0.1/app?durable_completions=true";
    /// let backend = PgBackend::connect(url).await?;
    ///
    /// // Or over the application's pool:
    /// let pool = sqlx::PgPool::connect("postgres://postgres@127.0.0.1/app").await.unwrap();
    /// let backend = PgBackend::from_pool(pool).durable_completions(true);
    /// # Ok(()) }
    /// ```
    pub fn durable_completions(mut self, on: bool) -> Self {
        self.durable_completions = on;
        self
    }

    /// Creates or upgrades the schema's tables. Idempotent, and safe when many processes run
    /// it at once (see [the schema module](crate::schema)).
    pub async fn migrate(&self) -> Result<(), Error> {
        migrate::migrate(&self.inner.pool, &self.inner.sql.schema).await
    }

    /// The latest migration applied to the schema (the highest version its `_jobs_migrations`
    /// records), or `None` if the schema was never migrated. After [`migrate`](Self::migrate)
    /// (which [`connect`](Self::connect) runs) it is the latest migration this release embeds.
    pub async fn schema_version(&self) -> Result<Option<i64>, Error> {
        migrate::applied_version(&self.inner.pool, &self.inner.sql.schema).await
    }

    /// Counts the completed and cancelled jobs again from their rows, in place of the counts
    /// and the per-minute buckets kept as they change (see [`schema`](crate::schema)): the
    /// repair after workers of a release without migrations 0005 and 0007 finished jobs beside
    /// this one. It reads every
    /// finished row and holds writes to `jobs` back while it does (about 0.25 s per million
    /// rows here). `jobs migrate --recount` runs it.
    pub async fn recount(&self) -> Result<(), Error> {
        let mut tx = self.inner.pool.begin().await.map_err(db)?;
        let lock = format!(
            "LOCK TABLE {}.jobs IN SHARE ROW EXCLUSIVE MODE",
            self.inner.sql.schema.quoted()
        );
        sqlx::query(&lock).execute(&mut *tx).await.map_err(db)?;
        sqlx::query(&self.inner.sql.recount)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)
    }

    /// The pool, for the application's own queries and transactions; jobs enqueued through it
    /// (`job.enqueue(backend.pool())`) go to this backend's schema (see
    /// [the rule](crate#enqueueing-in-a-transaction)).
    pub fn pool(&self) -> &PgPool {
        &self.inner.pool
    }

    /// The schema's name.
    pub fn schema_name(&self) -> &str {
        self.inner.sql.schema.name()
    }

    pub(crate) fn sql(&self) -> &Arc<Sql> {
        &self.inner.sql
    }
}

impl fmt::Debug for PgBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgBackend")
            .field("schema", &self.schema_name())
            .field("durable_completions", &self.durable_completions)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Backend for PgBackend {
    async fn enqueue(&self, p: EnqueueParams) -> Result<Vec<Enqueued>, Error> {
        if p.jobs.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.inner.pool.acquire().await.map_err(db)?;
        let wake = Wake::Commits(&self.inner.pool);
        enqueue::enqueue(&self.inner.sql, &mut conn, p.jobs, p.now, wake).await
    }

    async fn enqueue_cron(&self, p: CronTickParams) -> Result<Option<JobId>, Error> {
        let mut conn = self.inner.pool.acquire().await.map_err(db)?;
        enqueue::enqueue_cron(&self.inner.sql, &mut conn, p).await
    }

    async fn fetch(&self, p: FetchParams) -> Result<Vec<LeasedJob>, Error> {
        let jobs = fetch::fetch(&self.inner.sql, &self.inner.pool, &p).await?;
        let leased = !jobs.is_empty();
        self.inner.deliveries.offer_or_withdraw(&p, leased).await;
        Ok(jobs)
    }

    async fn complete(&self, p: CompleteParams) -> Result<Vec<bool>, Error> {
        // A relaxed commit holds Postgres' notification lock only briefly, so its statement
        // notifies; one that waits for its WAL flush leaves that to a statement of its own.
        let relaxed = !self.durable_completions;
        let (sql, pool) = (&self.inner.sql, &self.inner.pool);
        let (accepted, woken) = writes::complete(sql, pool, p, relaxed, relaxed).await?;
        notifier::after_commit(pool, sql.channel(), woken);
        Ok(accepted)
    }

    async fn fail(&self, p: FailParams) -> Result<Vec<bool>, Error> {
        writes::fail(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn release(&self, p: ReleaseParams) -> Result<Vec<bool>, Error> {
        writes::release(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn renew(&self, p: RenewParams) -> Result<Vec<bool>, Error> {
        writes::renew(&self.inner.sql, self.inner.renewals.pool(), p).await
    }

    fn reserves(&self) -> bool {
        true
    }

    /// 1,024: a fetch locks only the rows it leases, so a larger one holds no other client up,
    /// and it pays the statement's round trip and commit once for four times as many jobs.
    fn max_fetch(&self) -> usize {
        1024
    }

    async fn hold_places(&self, p: PlacesParams) -> Result<(), Error> {
        writes::hold_places(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn progress(&self, p: ProgressParams) -> Result<bool, Error> {
        writes::progress(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn read(&self, p: ReadParams) -> Result<Option<JobRecord>, Error> {
        reads::read(&self.inner.sql, &self.inner.pool, p.id).await
    }

    async fn list(&self, p: ListParams) -> Result<Vec<JobRecord>, Error> {
        reads::list(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn manage(&self, p: ManageParams) -> Result<Managed, Error> {
        manage::manage(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn rescue(&self, p: RescueParams) -> Result<Vec<JobId>, Error> {
        maintenance::rescue(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn prune(&self, p: PruneParams) -> Result<u64, Error> {
        maintenance::prune(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn counts(&self, p: CountsParams) -> Result<QueueCounts, Error> {
        reads::counts(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn queue_names(&self, _: QueueNamesParams) -> Result<Vec<String>, Error> {
        reads::queue_names(&self.inner.sql, &self.inner.pool).await
    }

    async fn pause(&self, p: PauseParams) -> Result<(), Error> {
        queues::pause(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn paused_queues(&self, _: PausedParams) -> Result<Vec<String>, Error> {
        queues::paused_queues(&self.inner.sql, &self.inner.pool).await
    }

    async fn set_limits(&self, p: SetLimitsParams) -> Result<(), Error> {
        flow::set_limits(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn flow(&self, _: FlowParams) -> Result<Vec<QueueFlow>, Error> {
        flow::flow(&self.inner.sql, &self.inner.pool).await
    }

    async fn finished_since(&self, p: FinishedParams) -> Result<u64, Error> {
        reads::finished_since(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn heartbeat(&self, p: HeartbeatParams) -> Result<(), Error> {
        presence::heartbeat(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn deregister(&self, p: DeregisterParams) -> Result<(), Error> {
        presence::deregister(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn hold_liveness(&self, p: HoldParams) -> Result<Liveness, Error> {
        let sql = self.inner.sql.clone();
        Ok(liveness::hold(&self.inner.pool, sql, p.worker))
    }

    async fn gone_workers(&self, _: GoneParams) -> Result<Vec<String>, Error> {
        liveness::gone(&self.inner.sql, &self.inner.pool).await
    }

    async fn live_workers(&self, p: WorkersParams) -> Result<Vec<WorkerInfo>, Error> {
        presence::live_workers(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn save_schedules(&self, p: SaveSchedulesParams) -> Result<(), Error> {
        presence::save_schedules(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn stored_schedules(&self, _: SchedulesParams) -> Result<Vec<StoredSchedule>, Error> {
        presence::stored_schedules(&self.inner.sql, &self.inner.pool).await
    }

    async fn publish_types(&self, p: PublishTypesParams) -> Result<(), Error> {
        catalog::publish_types(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn job_types(&self, _: JobTypesParams) -> Result<Vec<PublishedType>, Error> {
        catalog::job_types(&self.inner.sql, &self.inner.pool).await
    }

    async fn stored_versions(&self, p: StoredVersionsParams) -> Result<Vec<StoredVersion>, Error> {
        catalog::stored_versions(&self.inner.sql, &self.inner.pool, p).await
    }

    /// Starts (once per backend) the task that LISTENs on the schema's channel, then subscribes.
    async fn subscribe(&self, p: SubscribeParams) -> Result<Wakeup, Error> {
        let mut listening = self.inner.listening.lock().await;
        if listening.is_none() {
            let deliveries = &self.inner.deliveries;
            let routes: Vec<(String, Arc<dyn Relay>)> = vec![
                (self.inner.sql.channel().to_string(), self.inner.hub.clone()),
                (deliveries.channel().to_string(), deliveries.clone()),
            ];
            let live = deliveries.live();
            *listening = Some(listen::start(&self.inner.pool, routes, live).await);
        }
        Ok(self.inner.hub.subscribe(&p.queues, p.worker.as_deref()))
    }

    async fn end_deliveries(&self, p: EndDeliveriesParams) -> Result<(), Error> {
        self.inner.deliveries.end(p).await
    }

    fn publish(&self, events: Vec<JobEvent>) {
        self.inner.publisher.publish(events);
    }

    fn events_heard(&self) -> bool {
        self.inner.publisher.is_heard()
    }

    /// Starts (once per backend) the task that LISTENs on the schema's events channel, then
    /// subscribes.
    async fn events(&self, p: EventsParams) -> Result<EventStream, Error> {
        let mut hearing = self.inner.hearing.lock().await;
        if hearing.is_none() {
            let hub = self.inner.events.clone();
            let channel = self.inner.sql.events_channel();
            let routes: Vec<(String, Arc<dyn Relay>)> = vec![(channel, hub)];
            *hearing = Some(listen::start(&self.inner.pool, routes, Arc::default()).await);
        }
        Ok(self.inner.events.subscribe(p.queues))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
