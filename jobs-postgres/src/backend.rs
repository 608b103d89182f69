//! `PgBackend`: the [`Backend`] over a PostgreSQL pool, one schema.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use jobs_core::{
    Backend, CancelParams, CompleteParams, CountsParams, CronTickParams, DeleteParams,
    EnqueueParams, Enqueued, Error, FailParams, FetchParams, JobId, JobRecord, LeasedJob,
    ListParams, ProgressParams, PruneParams, QueueCounts, ReleaseParams, RenewParams, RescueParams,
    RetryParams, WakeHub, Wakeup,
};
use sqlx::PgPool;
use tokio::sync::Mutex;

use crate::enqueue::Wake;
use crate::error::db;
use crate::listen::{self, Listening};
use crate::schema::{Schema, DEFAULT_SCHEMA};
use crate::sql::Sql;
use crate::{enqueue, fetch, maintenance, manage, migrate, reads, writes};

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
}

struct Inner {
    pool: PgPool,
    sql: Arc<Sql>,
    hub: Arc<WakeHub>,
    /// The LISTEN task, started by the first `subscribe`.
    listening: Mutex<Option<Listening>>,
}

impl PgBackend {
    /// A backend over `pool` in the schema `jobs`. Does no I/O: call
    /// [`migrate`](Self::migrate) before first use (or use [`connect`](Self::connect)).
    pub fn from_pool(pool: PgPool) -> Self {
        let schema = Schema::new(DEFAULT_SCHEMA).expect("the default schema is valid");
        Self::with(pool, schema)
    }

    fn with(pool: PgPool, schema: Schema) -> Self {
        PgBackend {
            inner: Arc::new(Inner {
                pool,
                sql: Arc::new(Sql::new(schema)),
                hub: Arc::default(),
                listening: Mutex::new(None),
            }),
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
        Ok(Self::with(self.inner.pool.clone(), schema))
    }

    /// Creates or upgrades the schema's tables. Idempotent, and safe when many processes run
    /// it at once (see [the schema module](crate::schema)).
    pub async fn migrate(&self) -> Result<(), Error> {
        migrate::migrate(&self.inner.pool, &self.inner.sql.schema).await
    }

    /// The pool, for the application's own queries.
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
        fetch::fetch(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn complete(&self, p: CompleteParams) -> Result<Vec<bool>, Error> {
        writes::complete(&self.inner.sql, &self.inner.pool, p, true).await
    }

    async fn fail(&self, p: FailParams) -> Result<Vec<bool>, Error> {
        writes::fail(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn release(&self, p: ReleaseParams) -> Result<Vec<bool>, Error> {
        writes::release(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn renew(&self, p: RenewParams) -> Result<Vec<bool>, Error> {
        writes::renew(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn progress(&self, p: ProgressParams) -> Result<bool, Error> {
        writes::progress(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn job(&self, id: JobId) -> Result<Option<JobRecord>, Error> {
        reads::job(&self.inner.sql, &self.inner.pool, id).await
    }

    async fn list(&self, p: ListParams) -> Result<Vec<JobRecord>, Error> {
        reads::list(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn retry(&self, p: RetryParams) -> Result<bool, Error> {
        manage::retry(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn delete(&self, p: DeleteParams) -> Result<bool, Error> {
        manage::delete(&self.inner.sql, &self.inner.pool, p).await
    }

    async fn cancel(&self, p: CancelParams) -> Result<bool, Error> {
        manage::cancel(&self.inner.sql, &self.inner.pool, p).await
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

    /// Starts (once per backend) the task that LISTENs on the schema's channel, then subscribes.
    async fn subscribe(&self, queues: &[String]) -> Result<Wakeup, Error> {
        let mut listening = self.inner.listening.lock().await;
        if listening.is_none() {
            let hub = self.inner.hub.clone();
            *listening = Some(listen::start(&self.inner.pool, self.inner.sql.channel(), hub).await);
        }
        Ok(self.inner.hub.subscribe(queues))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
