//! The parameters every fetch statement shares: the lease's terms, and the worker's ended
//! leases that a limited fetch's running counts leave out.

use jobs_core::{later, FetchParams};

use crate::sql::PgQuery;

/// Binds what every fetch statement takes after its queue or queues, as `$2` to `$5`: now,
/// the limit, the worker and the lease's expiry.
pub(crate) fn lease_terms<'q>(query: PgQuery<'q>, p: &'q FetchParams) -> PgQuery<'q> {
    query
        .bind(p.now)
        .bind(i64::try_from(p.limit).unwrap_or(i64::MAX))
        .bind(&p.worker)
        .bind(later(p.now, p.lease_for))
}

/// Binds the ids and the lease tokens of the worker's ended leases, which a limited fetch's
/// running counts leave out, as its last two parameters.
pub(crate) fn ended_leases<'q>(query: PgQuery<'q>, p: &FetchParams) -> PgQuery<'q> {
    query
        .bind(p.ended.iter().map(|e| e.lease.id.0).collect::<Vec<_>>())
        .bind(p.ended.iter().map(|e| e.lease.token.0).collect::<Vec<_>>())
}
