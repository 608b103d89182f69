//! Writes under a lease, in batches: complete, fail, release, renew, and progress; and the places
//! promoted jobs hold. Each write under a lease checks the lease token and the running status
//! (complete also accepts a repeat of the completion that applied under the same token), and
//! answers which items it accepted.
//!
//! A batch's statement updates its rows in the order of its arrays, locking each as it goes,
//! and a worker writes several batches naming the same jobs at once on different connections
//! (a renewal of all its leases beside a completion batch). Each batch is therefore sent in
//! the order of its jobs' ids: two batches in different orders would wait for each other's
//! row locks, until PostgreSQL ended one with a deadlock error a second later (seen as a
//! completion failing in the bench's W6).

use std::collections::HashSet;

use jobs_core::{
    CompleteParams, Error, FailParams, LeaseRef, PlacesParams, ProgressParams, ReleaseParams,
    RenewParams, Timestamp,
};
use sqlx::{PgExecutor, Row};
use uuid::Uuid;

use crate::error::db;
use crate::record::report;
use crate::sql::{PgQuery, Sql};

/// Marks jobs completed with their results, applying the effects of the workflow steps among
/// them. `relaxed`: commit without waiting for the WAL flush (migration 0012's `complete_jobs`
/// says why that is safe for the worker's batches); the backend's batches unless it has
/// `durable_completions`, never a caller's transaction.
///
/// Per item, whether it was accepted; and the queues that got a ready step: notified by the
/// statement with `notify`, else returned for the caller to wake after its commit
/// ([`notifier::after_commit`](crate::notifier::after_commit)).
pub(crate) async fn complete<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: CompleteParams,
    relaxed: bool,
    notify: bool,
) -> Result<(Vec<bool>, Vec<String>), Error> {
    let leases: Vec<LeaseRef> = p.items.iter().map(|c| c.lease).collect();
    let results: Vec<&str> = p.items.iter().map(|c| c.result.get()).collect();
    under_leases(
        &sql.complete,
        Answers::Leases,
        exec,
        &leases,
        |query, order| {
            query
                .bind(in_order(&results, order))
                .bind(p.now)
                .bind(relaxed)
                .bind(notify.then(|| sql.channel()))
        },
    )
    .await
}

/// Records failed attempts: pending again at `retry_at`, or dead (applying the `on_dead`
/// effects of the workflow steps among those).
pub(crate) async fn fail<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: FailParams,
) -> Result<Vec<bool>, Error> {
    let leases: Vec<LeaseRef> = p.items.iter().map(|f| f.lease).collect();
    let reports = p
        .items
        .iter()
        .map(|f| report(&f.error))
        .collect::<Result<Vec<String>, Error>>()?;
    let retry_at: Vec<Option<Timestamp>> = p.items.iter().map(|f| f.retry_at).collect();
    under_leases(&sql.fail, Answers::Ids, exec, &leases, |query, order| {
        query
            .bind(in_order(&reports, order))
            .bind(in_order(&retry_at, order))
            .bind(p.now)
            .bind(sql.channel())
    })
    .await
    .map(|(accepted, _)| accepted)
}

/// Hands jobs back to pending without spending their attempt, each at its new `run_at` if
/// given.
pub(crate) async fn release<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: ReleaseParams,
) -> Result<Vec<bool>, Error> {
    let leases: Vec<LeaseRef> = p.items.iter().map(|r| r.lease).collect();
    let run_at: Vec<Option<Timestamp>> = p.items.iter().map(|r| r.run_at).collect();
    under_leases(&sql.release, Answers::Ids, exec, &leases, |query, order| {
        query
            .bind(in_order(&run_at, order))
            .bind(p.now)
            .bind(sql.channel())
    })
    .await
    .map(|(accepted, _)| accepted)
}

/// Extends leases that are held and have not lapsed.
pub(crate) async fn renew<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: RenewParams,
) -> Result<Vec<bool>, Error> {
    under_leases(&sql.renew, Answers::Ids, exec, &p.items, |query, _| {
        query.bind(p.expires_at).bind(p.now)
    })
    .await
    .map(|(accepted, _)| accepted)
}

/// Sets the places under a queue's concurrency limit that a worker's promoted jobs hold (see
/// [`Backend::hold_places`](jobs_core::Backend::hold_places)). It commits as any statement of
/// the session (durably, by default): the ended job whose outcome the worker writes next must
/// not leave the count before the place it handed on is in it, a server crash included.
pub(crate) async fn hold_places<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: PlacesParams,
) -> Result<(), Error> {
    sqlx::query(&sql.places)
        .bind(&p.queue)
        .bind(&p.worker)
        .bind(i32::try_from(p.places).unwrap_or(i32::MAX))
        .execute(exec)
        .await
        .map_err(db)?;
    Ok(())
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

/// How a batch write's returned rows name the items it accepted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Answers {
    /// `RETURNING id`: an item is accepted when its job is returned.
    Ids,
    /// `RETURNING id, lease_token`: an item is accepted when its job is returned under its
    /// token, so that a batch naming one job under both a stale and its accepted lease answers
    /// each apart (a completion matches a completed job too, see `complete_jobs`).
    Leases,
}

/// Runs a batch write whose statement takes the leases' ids and tokens as `$1` and `$2`, then
/// what `more` binds, and returns what it accepted (named as `answers` says): per item,
/// whether its write was; and the queues of the rows that name no job but a queue in their
/// third column (complete.sql's queues to wake).
///
/// The items go in the order of their ids (see the module's docs): `more` gets the items'
/// positions in that order, to bind its own arrays with [`in_order`]. The answers keep the
/// order of `leases`.
async fn under_leases<'q, 'e>(
    statement: &'q str,
    answers: Answers,
    exec: impl PgExecutor<'e>,
    leases: &[LeaseRef],
    more: impl FnOnce(PgQuery<'q>, &[usize]) -> PgQuery<'q>,
) -> Result<(Vec<bool>, Vec<String>), Error> {
    if leases.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut order: Vec<usize> = (0..leases.len()).collect();
    order.sort_by_key(|&i| leases[i].id.0);
    let ids: Vec<Uuid> = order.iter().map(|&i| leases[i].id.0).collect();
    let tokens: Vec<Uuid> = order.iter().map(|&i| leases[i].token.0).collect();
    let rows = more(sqlx::query(statement).bind(ids).bind(tokens), &order)
        .fetch_all(exec)
        .await
        .map_err(db)?;
    let by_token = answers == Answers::Leases;
    // Read without sqlx's check of each column's type against the Rust one (the statements'
    // own columns), and hashed with foldhash rather than SipHash: a batch's rows cost more in
    // the checks and the hashing than in decoding a uuid or two each.
    let mut accepted: HashSet<_, foldhash::fast::RandomState> =
        HashSet::with_capacity_and_hasher(rows.len(), Default::default());
    let mut woken = Vec::new();
    for row in &rows {
        match row.try_get_unchecked::<Option<Uuid>, _>(0).map_err(db)? {
            Some(id) => {
                let token = by_token
                    .then(|| row.try_get_unchecked::<Uuid, _>(1))
                    .transpose()
                    .map_err(db)?;
                accepted.insert((id, token));
            }
            None => woken.push(row.try_get_unchecked::<String, _>(2).map_err(db)?),
        }
    }
    let accepted = leases
        .iter()
        .map(|l| accepted.contains(&(l.id.0, by_token.then_some(l.token.0))))
        .collect();
    Ok((accepted, woken))
}

/// `values` (one per item) at the items' positions in `order`.
fn in_order<T: Clone>(values: &[T], order: &[usize]) -> Vec<T> {
    order.iter().map(|&i| values[i].clone()).collect()
}
