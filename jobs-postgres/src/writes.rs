//! Writes under a lease, in batches: complete, fail, release, renew, and progress. Each checks
//! the lease token and the running status, and answers which items it accepted.

use std::collections::HashSet;

use jobs_core::{
    CompleteParams, Error, FailParams, LeaseRef, ProgressParams, ReleaseParams, RenewParams,
    Timestamp,
};
use sqlx::PgExecutor;
use uuid::Uuid;

use crate::error::db;
use crate::record::storable;
use crate::sql::Sql;

/// Marks jobs completed with their results. `relaxed`: commit without waiting for the WAL
/// flush (see `sql/complete.sql` for why that is safe for the worker's batches); never for a
/// caller's transaction.
pub(crate) async fn complete<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: CompleteParams,
    relaxed: bool,
) -> Result<Vec<bool>, Error> {
    if p.items.is_empty() {
        return Ok(Vec::new());
    }
    let leases: Vec<LeaseRef> = p.items.iter().map(|c| c.lease).collect();
    let accepted: Vec<Uuid> = sqlx::query_scalar(&sql.complete)
        .bind(ids(&leases))
        .bind(tokens(&leases))
        .bind(p.items.iter().map(|c| c.result.get()).collect::<Vec<_>>())
        .bind(p.now)
        .bind(relaxed)
        .fetch_all(exec)
        .await
        .map_err(db)?;
    Ok(answer(&leases, accepted))
}

/// Records failed attempts: pending again at `retry_at`, or dead.
pub(crate) async fn fail<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: FailParams,
) -> Result<Vec<bool>, Error> {
    if p.items.is_empty() {
        return Ok(Vec::new());
    }
    let leases: Vec<LeaseRef> = p.items.iter().map(|f| f.lease).collect();
    let accepted: Vec<Uuid> = sqlx::query_scalar(&sql.fail)
        .bind(ids(&leases))
        .bind(tokens(&leases))
        .bind(
            p.items
                .iter()
                .map(|f| storable(&f.error))
                .collect::<Vec<_>>(),
        )
        .bind(
            p.items
                .iter()
                .map(|f| f.retry_at)
                .collect::<Vec<Option<Timestamp>>>(),
        )
        .bind(p.now)
        .bind(sql.channel())
        .fetch_all(exec)
        .await
        .map_err(db)?;
    Ok(answer(&leases, accepted))
}

/// Hands jobs back to pending without spending their attempt.
pub(crate) async fn release<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: ReleaseParams,
) -> Result<Vec<bool>, Error> {
    if p.items.is_empty() {
        return Ok(Vec::new());
    }
    let accepted: Vec<Uuid> = sqlx::query_scalar(&sql.release)
        .bind(ids(&p.items))
        .bind(tokens(&p.items))
        .bind(sql.channel())
        .fetch_all(exec)
        .await
        .map_err(db)?;
    Ok(answer(&p.items, accepted))
}

/// Extends leases that are held and have not lapsed.
pub(crate) async fn renew<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: RenewParams,
) -> Result<Vec<bool>, Error> {
    if p.items.is_empty() {
        return Ok(Vec::new());
    }
    let accepted: Vec<Uuid> = sqlx::query_scalar(&sql.renew)
        .bind(ids(&p.items))
        .bind(tokens(&p.items))
        .bind(p.expires_at)
        .bind(p.now)
        .fetch_all(exec)
        .await
        .map_err(db)?;
    Ok(answer(&p.items, accepted))
}

/// Records a running job's progress.
pub(crate) async fn progress<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: ProgressParams,
) -> Result<bool, Error> {
    let done = sqlx::query(&sql.progress)
        .bind(p.lease.id.0)
        .bind(p.lease.token.0)
        .bind(i16::from(p.progress.min(100)))
        .execute(exec)
        .await
        .map_err(db)?;
    Ok(done.rows_affected() == 1)
}

fn ids(leases: &[LeaseRef]) -> Vec<Uuid> {
    leases.iter().map(|l| l.id.0).collect()
}

fn tokens(leases: &[LeaseRef]) -> Vec<Uuid> {
    leases.iter().map(|l| l.token.0).collect()
}

/// Per item, whether the statement accepted its job.
fn answer(leases: &[LeaseRef], accepted: Vec<Uuid>) -> Vec<bool> {
    let accepted: HashSet<Uuid> = accepted.into_iter().collect();
    leases.iter().map(|l| accepted.contains(&l.id.0)).collect()
}
