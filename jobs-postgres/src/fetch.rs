//! Leasing ready jobs: one statement per batch, or, when a fetched queue has limits or keyed
//! jobs, the limited fetch's transaction ([`limited`](crate::limited)).
//!
//! Rows are decoded one by one: a row that does not decode is failed at once as dead, with an
//! error of kind decode saying it is corrupt, and is not returned; the rest of its batch is.

use std::collections::BTreeMap;

use futures_util::TryStreamExt;
use jobs_core::{Error, FailParams, Failure, FetchParams, KnownJob, LeasedJob, Timestamp};
use sqlx::postgres::PgRow;
use sqlx::PgPool;

use crate::error::db;
use crate::fetch_terms::lease_terms;
use crate::limited;
use crate::record::{int4, leased};
use crate::sql::Sql;
use crate::writes;

/// Leases up to `p.limit` ready jobs of `p.queues`, in run order. When every row of a batch
/// was corrupt, the next batch is fetched, so that an empty answer still means no job is ready.
pub(crate) async fn fetch(
    sql: &Sql,
    pool: &PgPool,
    p: &FetchParams,
) -> Result<Vec<LeasedJob>, Error> {
    if p.limit == 0 || p.queues.is_empty() {
        return Ok(Vec::new());
    }
    let mut queues = p.queues.clone();
    queues.sort_unstable();
    queues.dedup();
    loop {
        let (mut jobs, corrupt) = fetch_once(sql, pool, &queues, p).await?;
        let failed = corrupt.len();
        if failed > 0 {
            fail_corrupt(sql, pool, corrupt, p.now).await;
        }
        if !jobs.is_empty() || failed == 0 {
            jobs.sort_unstable_by_key(|j| (j.record.priority, j.record.run_at, j.record.id));
            return Ok(jobs);
        }
    }
}

/// One fetch over `queues` (sorted, distinct): the leased jobs that decode, and the failures
/// of those that do not.
async fn fetch_once(
    sql: &Sql,
    pool: &PgPool,
    queues: &[String],
    p: &FetchParams,
) -> Result<(Vec<LeasedJob>, Vec<Failure>), Error> {
    let checked = limited::checked(&p.flow, queues);
    let (names, versions) = known(p.known.as_deref());
    let mut fetched = Fetched::default();
    if checked.is_empty() {
        let query = match queues {
            [queue] => sqlx::query(&sql.fetch_one).bind(queue),
            queues => sqlx::query(&sql.fetch).bind(queues),
        };
        // Each row is decoded as it arrives, while the server still sends the rows after it:
        // decoding them after the last one had left the server idle for as long as the
        // worker took to decode them all (3 to 4 ms for a fetch of 700 in the bench's drain,
        // 2.7 ms since). The jobs are used only once the statement has ended, and so
        // committed.
        let mut rows = lease_terms(query, p).bind(names).bind(versions).fetch(pool);
        while let Some(row) = rows.try_next().await.map_err(db)? {
            fetched.add(&row)?;
        }
    } else {
        let rows = limited::fetch_rows(sql, pool, queues, &checked, p, (names, versions)).await?;
        for row in &rows {
            fetched.add(row)?;
        }
    }
    Ok((fetched.jobs, fetched.corrupt))
}

/// The jobs of a fetch's rows, and a failure for each row that does not decode.
#[derive(Default)]
struct Fetched {
    jobs: Vec<LeasedJob>,
    corrupt: Vec<Failure>,
}

impl Fetched {
    /// Decodes `row` into a job, or a failure.
    fn add(&mut self, row: &PgRow) -> Result<(), Error> {
        match leased(row)? {
            Ok(job) => self.jobs.push(job),
            Err(failure) => self.corrupt.push(failure),
        }
        Ok(())
    }
}

/// The names a fetch takes jobs of, and the newest version of each, as two arrays in one order
/// (the statements compare a row's version with `versions[array_position(names, name)]`):
/// both NULL when `known` is `None` (every job). A name listed twice counts with its newest
/// version, as [`KnownJob::admits`] has it.
pub(crate) fn known(known: Option<&[KnownJob]>) -> (Option<Vec<&str>>, Option<Vec<i32>>) {
    let Some(known) = known else {
        return (None, None);
    };
    let mut newest: BTreeMap<&str, u32> = BTreeMap::new();
    for k in known {
        let version = newest.entry(k.name.as_str()).or_default();
        *version = (*version).max(k.version);
    }
    let versions = newest.values().map(|&v| int4(v)).collect();
    (Some(newest.into_keys().collect()), Some(versions))
}

/// Fails the corrupt jobs of a fetch as dead. Should the write itself fail, their leases lapse
/// and a later fetch fails them again; the rest of the batch runs either way.
async fn fail_corrupt(sql: &Sql, pool: &PgPool, items: Vec<Failure>, now: Timestamp) {
    let ids: Vec<_> = items.iter().map(|f| f.lease.id).collect();
    if let Err(e) = writes::fail(sql, pool, FailParams { items, now }).await {
        tracing::warn!(?ids, error = %e, "could not fail corrupt jobs; their leases will lapse");
    }
}
