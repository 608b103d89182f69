//! The fetch of queues with limits or keyed jobs: one statement calling a function of the
//! schema that locks the checked queues, then counts and leases. Queues that hold no keyed
//! jobs (the common case: a queue's concurrency, its rate, or both) go through
//! `fetch_unkeyed_one` for one queue (`sql/fetch_unkeyed_one.sql`, migration 0016), whose short
//! statements run only where the queue's limits need them (and which reserves leases beyond a
//! concurrency since 0017, see [`FetchParams::reserve`]), and through `fetch_unkeyed` for
//! several (`sql/fetch_unkeyed.sql`, migration 0011), whose second statement prunes, counts,
//! leases and logs at once; a fetch over any keyed queue goes through `fetch_limited`
//! (`sql/fetch_limited.sql`), which checks each job's key limits. All take the same locks, so
//! they take turns on a queue whichever a worker calls. Each running count of a queue's
//! concurrency adds the places that workers' promoted jobs hold (`flow_places`, migration 0018).
//!
//! Under READ COMMITTED a statement's snapshot is taken when it starts, so a lock taken inside
//! the counting statement would not make the leases that another fetcher committed meanwhile
//! visible to it. Each function therefore takes the locks (a transaction-level advisory lock per
//! checked queue, in sorted order) in a statement of its own, before the counting statement:
//! each statement of a VOLATILE function takes a fresh snapshot, so the limited fetches of one
//! queue take turns across every process, each counting what the previous one leased, and the
//! locks go when the calling statement's transaction ends, all in one round trip.
//!
//! A queue's rate is counted from its running total (`flow_started`), which the functions keep
//! as they remove the log rows that left the window and log the new starts, so a fetch reads
//! one row for it however many batches the window holds (a key's rate still sums its key's
//! rows inside the window: at most its limit). Migration 0006 created `fetch_limited`; it takes
//! the versions a worker knows since 0008, and leaves the worker's ended leases out of its
//! running counts since 0010, which defines it now. Changing either function takes a new
//! migration.
//!
//! A keyed queue's scan looks at most [`FLOW_SCAN`] candidates beyond its room, so a long run
//! of jobs of saturated keys delays the jobs behind it (until the keys have room) rather than
//! making a fetch read the whole queue.

use jobs_core::{Error, FetchParams, QueueFlow, QueueLimits, FLOW_SCAN};
use sqlx::postgres::PgRow;
use sqlx::PgPool;

use crate::error::db;
use crate::fetch_terms::{ended_leases, lease_terms};
use crate::record::{int4, millis};
use crate::sql::Sql;

/// The flow entries of `queues` that a fetch must check: those with a concurrency or rate
/// limit, or keyed.
pub(crate) fn checked<'f>(flow: &'f [QueueFlow], queues: &[String]) -> Vec<&'f QueueFlow> {
    flow.iter()
        .filter(|f| (f.limits.limits_starts() || f.keyed) && queues.contains(&f.queue))
        .collect()
}

/// Leases the rows of one limited fetch over `queues` (sorted, distinct), `checked` naming
/// the limits of those it checks, `known` the names and versions it takes
/// ([`fetch::known`](crate::fetch::known)): through `fetch_unkeyed` unless a checked queue is
/// keyed.
pub(crate) async fn fetch_rows(
    sql: &Sql,
    pool: &PgPool,
    queues: &[String],
    checked: &[&QueueFlow],
    p: &FetchParams,
    (names, versions): (Option<Vec<&str>>, Option<Vec<i32>>),
) -> Result<Vec<PgRow>, Error> {
    let flow_of = |queue: &String| checked.iter().find(|f| &f.queue == queue);
    let limits: Vec<_> = queues
        .iter()
        .map(|q| flow_of(q).map(|f| (f.limits, f.keyed)))
        .collect();
    if let ([queue], [Some((one, false))]) = (queues, limits.as_slice()) {
        return fetch_one_queue(sql, pool, queue, one, p, (names, versions)).await;
    }
    let keyed: Vec<bool> = limits
        .iter()
        .map(|l| l.is_some_and(|(_, keyed)| keyed))
        .collect();
    let any_keyed = keyed.contains(&true);
    let statement = if any_keyed {
        &sql.fetch_limited
    } else {
        &sql.fetch_unkeyed
    };
    let query = lease_terms(sqlx::query(statement).bind(queues), p)
        .bind(names)
        .bind(column(&limits, |(l, _)| l.concurrency.map(int4)))
        .bind(column(&limits, |(l, _)| l.rate.map(|r| int4(r.limit))))
        .bind(column(&limits, |(l, _)| l.rate.map(|r| millis(r.period))));
    // `fetch_limited` takes each queue's keyed flag before the checked ones, and the size of a
    // keyed scan after them.
    let query = if any_keyed { query.bind(keyed) } else { query };
    let query = query.bind(limits.iter().map(Option::is_some).collect::<Vec<_>>());
    let query = if any_keyed {
        query.bind(i64::try_from(FLOW_SCAN).unwrap_or(i64::MAX))
    } else {
        query
    };
    let query = query.bind(sql.schema.name()).bind(versions);
    let rows = ended_leases(query, p).fetch_all(pool).await.map_err(db)?;
    Ok(rows)
}

/// [`fetch_rows`] of one checked queue without keyed jobs, through `fetch_unkeyed_one`.
async fn fetch_one_queue(
    sql: &Sql,
    pool: &PgPool,
    queue: &str,
    limits: &QueueLimits,
    p: &FetchParams,
    (names, versions): (Option<Vec<&str>>, Option<Vec<i32>>),
) -> Result<Vec<PgRow>, Error> {
    let query = lease_terms(sqlx::query(&sql.fetch_unkeyed_one).bind(queue), p)
        .bind(names)
        .bind(versions)
        .bind(limits.concurrency.map(int4))
        .bind(limits.rate.map(|r| int4(r.limit)))
        .bind(limits.rate.map(|r| millis(r.period)))
        .bind(sql.schema.name());
    let reserve = i64::try_from(p.reserve).unwrap_or(i64::MAX);
    ended_leases(query, p)
        .bind(reserve)
        .fetch_all(pool)
        .await
        .map_err(db)
}

/// One array parameter: `value` of each checked queue, NULL for the others.
fn column<T, V>(limits: &[Option<T>], value: impl Fn(&T) -> Option<V>) -> Vec<Option<V>> {
    limits.iter().map(|l| l.as_ref().and_then(&value)).collect()
}
