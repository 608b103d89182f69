//! The completion transaction: a handler's database writes and its job's completion commit
//! together, so the job's effects happen once even though delivery is at least once.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use async_trait::async_trait;
use jobs_core::{
    BackendContext as _, CompleteParams, Completion, CompletionHook, Error, JobContext, Timestamp,
};
use sqlx::{PgConnection, PgPool, Postgres, Transaction};
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::error::db;
use crate::sql::Sql;
use crate::{notifier, writes, PgBackend};

type Slot = Arc<Mutex<Option<Transaction<'static, Postgres>>>>;

/// A transaction that commits together with the job's completion. Dereferences to the
/// connection: `sqlx::query(..).execute(&mut *tx)`.
///
/// Get it with [`transaction`]. When the handler succeeds, the worker marks the job completed
/// inside this transaction (if this worker still holds the job's lease) and commits; when the
/// handler fails, or the lease was lost, the transaction rolls back and none of its writes
/// happen. Drop it before the handler returns (it is, when it goes out of scope).
pub struct JobTransaction {
    guard: OwnedMutexGuard<Option<Transaction<'static, Postgres>>>,
}

impl std::fmt::Debug for JobTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobTransaction").finish_non_exhaustive()
    }
}

impl Deref for JobTransaction {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        self.guard
            .as_ref()
            .expect("the transaction is taken only after the handler")
    }
}

impl DerefMut for JobTransaction {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.guard
            .as_mut()
            .expect("the transaction is taken only after the handler")
    }
}

/// Begins the running job's completion transaction (see [`JobTransaction`]).
///
/// Call it once per attempt: a second call begins a new transaction and the first one's writes
/// roll back. Fails with [`Error::Invalid`] when the job did not come from a [`PgBackend`].
///
/// ```no_run
/// use jobs_core::{JobContext, JobError};
///
/// async fn ship(order_id: i64, ctx: JobContext) -> Result<(), JobError> {
///     let mut tx = jobs_postgres::transaction(&ctx).await?;
///     sqlx::query("UPDATE orders SET shipped = true WHERE id = $1")
///         .bind(order_id)
///         .execute(&mut *tx)
///         .await?;
///     Ok(()) // the update commits with the job's completion, or not at all
/// }
/// ```
pub async fn transaction(ctx: &JobContext) -> Result<JobTransaction, Error> {
    let backend = ctx.backend().downcast_ref::<PgBackend>().ok_or_else(|| {
        Error::Invalid("jobs_postgres::transaction needs a job run from a PgBackend".to_string())
    })?;
    let tx = backend.pool().begin().await.map_err(db)?;
    let slot: Slot = Arc::new(Mutex::new(Some(tx)));
    let guard = slot.clone().try_lock_owned().expect("a new mutex is free");
    ctx.set_completion_hook(Box::new(CompleteInTransaction {
        slot,
        sql: backend.sql().clone(),
        pool: backend.pool().clone(),
    }));
    Ok(JobTransaction { guard })
}

/// Completes the job inside the handler's transaction, then commits it and wakes the queues
/// of the steps its completion made ready (after the commit: see
/// [`notifier::after_commit`](crate::notifier::after_commit)).
struct CompleteInTransaction {
    slot: Slot,
    sql: Arc<Sql>,
    pool: PgPool,
}

#[async_trait]
impl CompletionHook for CompleteInTransaction {
    async fn complete(
        self: Box<Self>,
        completion: Completion,
        now: Timestamp,
    ) -> Result<bool, Error> {
        let mut slot = self.slot.try_lock().map_err(|_| {
            Error::Invalid(
                "the job's transaction is still held after its handler returned; \
                 drop the JobTransaction inside the handler"
                    .to_string(),
            )
        })?;
        let mut tx = slot
            .take()
            .ok_or_else(|| Error::backend("the job's transaction was already finished"))?;
        let params = CompleteParams {
            items: vec![completion],
            now,
        };
        let (accepted, woken) = writes::complete(&self.sql, &mut *tx, params, false, false).await?;
        if accepted.first() == Some(&true) {
            tx.commit().await.map_err(db)?;
            notifier::after_commit(&self.pool, self.sql.channel(), woken);
            Ok(true)
        } else {
            tx.rollback().await.map_err(db)?;
            Ok(false)
        }
    }
}
