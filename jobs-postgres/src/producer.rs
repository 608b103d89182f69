//! Enqueueing through a pool or a connection — in particular inside the caller's transaction,
//! so a job exists exactly when the transaction that made it commits.

use std::future::Future;
use std::sync::Arc;

use jobs_core::{Clock, Enqueued, Error, JobId, JobRecord, NewJob, Producer, SystemClock};
use sqlx::{PgConnection, PgPool};

use crate::enqueue::{self, Wake};
use crate::error::db;
use crate::sql::{Sql, DEFAULT_SQL};
use crate::{reads, PgBackend};

/// The [`Producer`] marker of pools and connections; always inferred.
pub enum ViaPostgres {}

/// Enqueues into the schema `jobs` through a pool: `job.enqueue(&pool)`.
///
/// For another schema, enqueue through the [`PgBackend`] or [`PgBackend::on`].
impl Producer<ViaPostgres> for &PgPool {
    async fn enqueue_jobs(self, jobs: Vec<NewJob>) -> Result<Vec<Enqueued>, Error> {
        let mut conn = self.acquire().await.map_err(db)?;
        let wake = Wake::Commits(self);
        enqueue::enqueue(&DEFAULT_SQL, &mut conn, jobs, SystemClock.now(), wake).await
    }

    fn read_job(self, id: JobId) -> impl Future<Output = Result<Option<JobRecord>, Error>> + Send {
        reads::job(&DEFAULT_SQL, self, id)
    }
}

/// Enqueues into the schema `jobs` on a connection, typically a transaction's:
/// `job.enqueue(&mut *tx)`. The job becomes visible to workers, and wakes them, when the
/// transaction commits; if it rolls back, the job never existed.
///
/// ```no_run
/// # async fn demo(pool: sqlx::PgPool, job: impl jobs_core::Job) -> Result<(), jobs_core::Error> {
/// use jobs_core::JobExt;
/// # use jobs_postgres as _; // links the impls
///
/// let mut tx = pool.begin().await.unwrap();
/// sqlx::query("INSERT INTO orders (id) VALUES (1)").execute(&mut *tx).await.unwrap();
/// job.enqueue(&mut *tx).await?;
/// tx.commit().await.unwrap(); // the order and its job, or neither
/// # Ok(()) }
/// ```
impl Producer<ViaPostgres> for &mut PgConnection {
    fn enqueue_jobs(
        self,
        jobs: Vec<NewJob>,
    ) -> impl Future<Output = Result<Vec<Enqueued>, Error>> + Send {
        enqueue::enqueue(
            &DEFAULT_SQL,
            self,
            jobs,
            SystemClock.now(),
            Wake::InTransaction,
        )
    }

    fn read_job(self, id: JobId) -> impl Future<Output = Result<Option<JobRecord>, Error>> + Send {
        reads::job(&DEFAULT_SQL, self, id)
    }
}

/// A connection bound to a backend's schema, from [`PgBackend::on`].
#[derive(Debug)]
pub struct OnConnection<'c> {
    sql: Arc<Sql>,
    conn: &'c mut PgConnection,
}

impl PgBackend {
    /// Enqueues into this backend's schema on `conn`, such as the caller's transaction:
    /// `job.enqueue(backend.on(&mut *tx))`.
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
        OnConnection {
            sql: self.sql().clone(),
            conn,
        }
    }
}

impl Producer<ViaPostgres> for OnConnection<'_> {
    async fn enqueue_jobs(self, jobs: Vec<NewJob>) -> Result<Vec<Enqueued>, Error> {
        let wake = Wake::InTransaction;
        enqueue::enqueue(&self.sql, self.conn, jobs, SystemClock.now(), wake).await
    }

    async fn read_job(self, id: JobId) -> Result<Option<JobRecord>, Error> {
        reads::job(&self.sql, self.conn, id).await
    }
}
