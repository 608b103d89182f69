//! Enqueueing through a pool or a connection — in particular inside the caller's transaction,
//! so a job exists exactly when the transaction that made it commits. Which schema each one
//! writes to: [the crate's rule](crate#enqueueing-in-a-transaction).

use std::sync::Arc;

use jobs_core::{AnyBackend, Enqueued, Error, JobId, JobRecord, NewJob, Producer, Timestamp};
use sqlx::{PgConnection, PgPool};

use crate::enqueue::{self, Wake};
use crate::error::db;
use crate::sql::Sql;
use crate::{pools, reads, PgBackend};

/// The [`Producer`] marker of pools and connections; always inferred.
#[doc(hidden)]
pub enum ViaPostgres {}

/// Enqueues through a pool: `job.enqueue(&pool)`, into the schema of the backends over the
/// pool (see [the rule](crate#enqueueing-in-a-transaction)).
impl Producer<ViaPostgres> for &PgPool {
    async fn enqueue_jobs(self, jobs: Vec<NewJob>, now: Timestamp) -> Result<Vec<Enqueued>, Error> {
        let sql = pools::for_pool(self)?;
        let mut conn = self.acquire().await.map_err(db)?;
        enqueue::enqueue(&sql, &mut conn, jobs, now, Wake::Commits(self)).await
    }

    async fn read_job(self, id: JobId) -> Result<Option<JobRecord>, Error> {
        let sql = pools::for_pool(self)?;
        reads::read(&sql, self, id).await
    }
}

/// Enqueues on a connection, typically a transaction's: `job.enqueue(&mut *tx)`, into the
/// schema of this process's backends (see [the rule](crate#enqueueing-in-a-transaction)). The
/// job becomes visible to workers, and wakes them, when the transaction commits; if it rolls
/// back, the job never existed.
///
/// ```no_run
/// # async fn demo(backend: jobs_postgres::PgBackend, job: impl jobs_core::Job) -> Result<(), jobs_core::Error> {
/// use jobs_core::JobExt;
///
/// let mut tx = backend.pool().begin().await.unwrap();
/// sqlx::query("INSERT INTO orders (id) VALUES (1)").execute(&mut *tx).await.unwrap();
/// job.enqueue(&mut *tx).await?;
/// tx.commit().await.unwrap(); // the order and its job, or neither
/// # Ok(()) }
/// ```
impl Producer<ViaPostgres> for &mut PgConnection {
    async fn enqueue_jobs(self, jobs: Vec<NewJob>, now: Timestamp) -> Result<Vec<Enqueued>, Error> {
        let sql = pools::for_connection()?;
        enqueue::enqueue(&sql, self, jobs, now, Wake::InTransaction).await
    }

    async fn read_job(self, id: JobId) -> Result<Option<JobRecord>, Error> {
        let sql = pools::for_connection()?;
        reads::read(&sql, self, id).await
    }
}

/// A connection bound to a backend's schema, from [`PgBackend::on`] or [`PostgresExt::on`].
#[derive(Debug)]
pub struct OnConnection<'c> {
    /// The backend's statements, or why there is no Postgres backend.
    sql: Result<Arc<Sql>, Error>,
    conn: &'c mut PgConnection,
}

impl PgBackend {
    /// Enqueues into this backend's schema on `conn`, such as the caller's transaction:
    /// `job.enqueue(backend.on(&mut *tx))` (the same as [`PostgresExt::on`], without the
    /// import).
    ///
    /// ```no_run
    /// # async fn demo(backend: jobs_postgres::PgBackend, job: impl jobs_core::Job) -> Result<(), jobs_core::Error> {
    /// use jobs_core::JobExt;
    ///
    /// let mut tx = backend.pool().begin().await.unwrap();
    /// job.enqueue(backend.on(&mut *tx)).await?;
    /// tx.commit().await.unwrap();
    /// # Ok(()) }
    /// ```
    pub fn on<'c>(&self, conn: &'c mut PgConnection) -> OnConnection<'c> {
        PostgresExt::on(self, conn)
    }
}

impl Producer<ViaPostgres> for OnConnection<'_> {
    async fn enqueue_jobs(self, jobs: Vec<NewJob>, now: Timestamp) -> Result<Vec<Enqueued>, Error> {
        let sql = self.sql?;
        enqueue::enqueue(&sql, self.conn, jobs, now, Wake::InTransaction).await
    }

    async fn read_job(self, id: JobId) -> Result<Option<JobRecord>, Error> {
        let sql = self.sql?;
        reads::read(&sql, self.conn, id).await
    }
}

/// Postgres features of a backend that may be a [`PgBackend`]: the [`AnyBackend`] that
/// `jobs::connect(url)` returns, without downcasting.
///
/// ```no_run
/// # async fn demo(job: impl jobs_core::Job) -> Result<(), jobs_core::Error> {
/// use jobs_core::{AnyBackend, JobExt};
/// use jobs_postgres::{PgBackend, PostgresExt};
///
/// let url = "postgres://localhost/app?schema=billing";
/// let backend = AnyBackend::new(PgBackend::connect(url).await?); // as `jobs::connect(url)`
/// let mut tx = backend.postgres()?.pool().begin().await.unwrap();
/// job.enqueue(backend.on(&mut *tx)).await?; // into `billing`, with the transaction
/// tx.commit().await.unwrap();
/// # Ok(()) }
/// ```
pub trait PostgresExt {
    /// The backend as a [`PgBackend`]; [`Error::Invalid`] when it is another kind.
    fn postgres(&self) -> Result<&PgBackend, Error>;

    /// Enqueues into the backend's schema on `conn`, such as the caller's transaction:
    /// `job.enqueue(backend.on(&mut *tx))`. When the backend is not a [`PgBackend`], the
    /// enqueue (or read) fails with [`Error::Invalid`].
    fn on<'c>(&self, conn: &'c mut PgConnection) -> OnConnection<'c> {
        OnConnection {
            sql: self.postgres().map(|backend| backend.sql().clone()),
            conn,
        }
    }
}

impl PostgresExt for PgBackend {
    fn postgres(&self) -> Result<&PgBackend, Error> {
        Ok(self)
    }
}

impl PostgresExt for AnyBackend {
    fn postgres(&self) -> Result<&PgBackend, Error> {
        self.downcast_ref::<PgBackend>().ok_or_else(|| {
            Error::Invalid(
                "this backend is not PostgreSQL: enqueueing on a Postgres connection or \
                 transaction needs a backend connected with a postgres:// URL"
                    .to_string(),
            )
        })
    }
}
