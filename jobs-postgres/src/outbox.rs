//! The enqueue transaction: the caller's writes and the jobs they call for commit together, and
//! the workers are woken after the commit rather than from inside it.
//!
//! A `pg_notify` in a transaction takes Postgres' notification lock at commit and holds it
//! through the WAL flush, so transactions that notify commit one after another: under load a
//! web request that enqueued inside its transaction waits for every other such commit ahead of
//! it (the orders example, 20 clients: most of its backends waiting on that lock). An
//! [`EnqueueTransaction`] notes the queues its enqueues made ready jobs in and wakes them once
//! it has committed, through the process's coalescing notifier, so its commit shares flushes
//! with the others. Should the process die between the commit and the signal, the workers find
//! the jobs at their next poll.

use std::collections::BTreeSet;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use jobs_core::{Enqueued, Error, JobId, JobRecord, NewJob, Producer, Timestamp};
use sqlx::{PgConnection, PgPool, Postgres, Transaction};

use crate::enqueue::{self, Wake};
use crate::error::db;
use crate::producer::ViaPostgres;
use crate::sql::Sql;
use crate::{notifier, reads, PgBackend};

/// A transaction of the backend's pool to enqueue in, beside the caller's own writes: from
/// [`PgBackend::begin`] (on the [`AnyBackend`](jobs_core::AnyBackend) of `jobs::connect`:
/// `backend.postgres()?.begin()`, with [`PostgresExt`](crate::PostgresExt)). Dereferences to the connection
/// (`sqlx::query(..).execute(&mut *tx)`); `job.enqueue(&mut tx)` enqueues into the backend's
/// schema. The jobs exist, and the workers are woken, once [`commit`](Self::commit) returns;
/// dropped or [rolled back](Self::rollback), neither its writes nor its jobs happen.
///
/// ```no_run
/// # async fn demo(backend: jobs_postgres::PgBackend, job: impl jobs_core::Job) -> Result<(), jobs_core::Error> {
/// use jobs_core::JobExt;
///
/// let mut tx = backend.begin().await?;
/// sqlx::query("INSERT INTO orders (id) VALUES (1)").execute(&mut *tx).await.unwrap();
/// job.enqueue(&mut tx).await?;
/// tx.commit().await?; // the order and its job, or neither
/// # Ok(()) }
/// ```
pub struct EnqueueTransaction {
    tx: Transaction<'static, Postgres>,
    sql: Arc<Sql>,
    pool: PgPool,
    /// The queues its enqueues made ready jobs in.
    woken: BTreeSet<String>,
}

impl std::fmt::Debug for EnqueueTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnqueueTransaction")
            .field("schema", &self.sql.channel())
            .field("woken", &self.woken)
            .finish_non_exhaustive()
    }
}

impl EnqueueTransaction {
    /// Commits the transaction, then wakes the workers of the queues its jobs are ready in.
    pub async fn commit(self) -> Result<(), Error> {
        self.tx.commit().await.map_err(db)?;
        let woken = self.woken.into_iter().collect();
        notifier::after_commit(&self.pool, self.sql.channel(), woken);
        Ok(())
    }

    /// Rolls the transaction back: none of its writes or jobs happen.
    pub async fn rollback(self) -> Result<(), Error> {
        self.tx.rollback().await.map_err(db)
    }
}

impl Deref for EnqueueTransaction {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        &self.tx
    }
}

impl DerefMut for EnqueueTransaction {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.tx
    }
}

impl PgBackend {
    /// Begins an [`EnqueueTransaction`] on a connection of the backend's pool.
    pub async fn begin(&self) -> Result<EnqueueTransaction, Error> {
        Ok(EnqueueTransaction {
            tx: self.pool().begin().await.map_err(db)?,
            sql: self.sql().clone(),
            pool: self.pool().clone(),
            woken: BTreeSet::new(),
        })
    }
}

/// Enqueues inside the transaction, into its backend's schema: `job.enqueue(&mut tx)`.
impl Producer<ViaPostgres> for &mut EnqueueTransaction {
    async fn enqueue_jobs(self, jobs: Vec<NewJob>, now: Timestamp) -> Result<Vec<Enqueued>, Error> {
        let sql = self.sql.clone();
        let wake = Wake::AfterCommit(&mut self.woken);
        enqueue::enqueue(&sql, &mut self.tx, jobs, now, wake).await
    }

    async fn read_job(self, id: JobId) -> Result<Option<JobRecord>, Error> {
        reads::read(&self.sql, &mut *self.tx, id).await
    }
}
