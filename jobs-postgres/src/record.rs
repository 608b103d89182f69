//! Rows to job records, and the few conversions between Rust and column types.

use std::collections::BTreeMap;
use std::time::Duration;

use jobs_core::{
    Error, ErrorReport, Failure, JobId, JobRecord, Json, Lease, LeaseRef, LeaseToken, LeasedJob,
    NewJob, Timestamp,
};
use serde_json::value::RawValue;
use sqlx::postgres::{PgRow, Postgres};
use sqlx::Row;
use uuid::Uuid;

use crate::error::db;

/// Where each of the `{record}` columns of [`Sql`](crate::sql::Sql) sits in a row: every
/// statement selects them first, in this order. A row is read by position, not by name: a
/// name is looked up in a hash map of the row's columns, some thirty times per job.
mod at {
    pub(super) const ID: usize = 0;
    pub(super) const NAME: usize = 1;
    pub(super) const QUEUE: usize = 2;
    pub(super) const PAYLOAD: usize = 3;
    pub(super) const VERSION: usize = 4;
    pub(super) const PRIORITY: usize = 5;
    pub(super) const RUN_AT: usize = 6;
    pub(super) const STATUS: usize = 7;
    pub(super) const ATTEMPT: usize = 8;
    pub(super) const MAX_ATTEMPTS: usize = 9;
    pub(super) const BACKOFF: usize = 10;
    pub(super) const TIMEOUT_MS: usize = 11;
    pub(super) const LEASE_WORKER: usize = 12;
    pub(super) const LEASE_TOKEN: usize = 13;
    pub(super) const LEASE_EXPIRES_AT: usize = 14;
    pub(super) const PROGRESS: usize = 15;
    pub(super) const RESULT: usize = 16;
    pub(super) const ERRORS: usize = 17;
    pub(super) const UNIQUE_KEY: usize = 18;
    pub(super) const TRACE_CONTEXT: usize = 19;
    pub(super) const TAGS: usize = 20;
    pub(super) const CREATED_AT: usize = 21;
    pub(super) const STARTED_AT: usize = 22;
    pub(super) const FINISHED_AT: usize = 23;
    pub(super) const KEY_LIMITS: usize = 24;
    pub(super) const STEP: usize = 25;
    pub(super) const INPUTS: usize = 26;
    /// The column a fetch that may reserve adds after them (`reserved`).
    pub(super) const RESERVED: usize = 27;
}

/// A record read with the `{record}` columns of [`Sql`](crate::sql::Sql). A lease is all three
/// lease columns: a completed job keeps its token alone, and has none. A row that does not
/// decode (a column of an unknown shape, written by hand or by another program) is an error
/// saying `stored job <id> is corrupt: <why>`.
pub(crate) fn record(row: &PgRow) -> Result<JobRecord, Error> {
    record_of(row, JobId(get(row, at::ID)?))
}

/// [`record`] of the row of job `id`, its id already read.
fn record_of(row: &PgRow, id: JobId) -> Result<JobRecord, Error> {
    decode(row, id)
        .map_err(|e| Error::backend(format!("stored job {id} is corrupt: {}", e.detail())))
}

/// Column `at` of `row` as a `T`, without sqlx's check that the column's type suits `T`, which
/// compared type infos for each of the some thirty columns of every job read (a tenth of the
/// client's work per drained job): the `{record}` columns' types are the migrations', and a
/// value of another shape still fails to decode.
fn get<'r, T: sqlx::Decode<'r, Postgres>>(row: &'r PgRow, at: usize) -> Result<T, Error> {
    row.try_get_unchecked(at).map_err(db)
}

/// The record of job `id` from its row.
fn decode(row: &PgRow, id: JobId) -> Result<JobRecord, Error> {
    let token: Option<Uuid> = get(row, at::LEASE_TOKEN)?;
    let worker: Option<&str> = get(row, at::LEASE_WORKER)?;
    let expires_at: Option<Timestamp> = get(row, at::LEASE_EXPIRES_AT)?;
    let lease = match (worker, token, expires_at) {
        (Some(worker), Some(token), Some(expires_at)) => Some(Lease {
            worker: worker.into(),
            token: LeaseToken(token),
            expires_at,
        }),
        _ => None,
    };
    let status: &str = get(row, at::STATUS)?;
    let backoff: &str = get(row, at::BACKOFF)?;
    let errors: &str = get(row, at::ERRORS)?;
    let result: Option<String> = get(row, at::RESULT)?;
    let timeout_ms: Option<i64> = get(row, at::TIMEOUT_MS)?;
    let attempt: i32 = get(row, at::ATTEMPT)?;
    let max_attempts: i32 = get(row, at::MAX_ATTEMPTS)?;
    let progress: i16 = get(row, at::PROGRESS)?;
    let key_limits: Option<&str> = get(row, at::KEY_LIMITS)?;
    let version: i32 = get(row, at::VERSION)?;
    let step: Option<&str> = get(row, at::STEP)?;
    let inputs: Option<&str> = get(row, at::INPUTS)?;
    Ok(JobRecord {
        id,
        name: get::<&str>(row, at::NAME)?.into(),
        queue: get::<&str>(row, at::QUEUE)?.into(),
        payload: json(get(row, at::PAYLOAD)?)?,
        version: payload_version(version)?,
        priority: get(row, at::PRIORITY)?,
        run_at: get(row, at::RUN_AT)?,
        status: status.parse()?,
        attempt: u32::try_from(attempt).unwrap_or(0),
        max_attempts: u32::try_from(max_attempts).unwrap_or(1),
        backoff: serde_json::from_str(backoff)?,
        timeout: timeout_ms.map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0))),
        lease,
        progress: u8::try_from(progress.clamp(0, 100)).unwrap_or(0),
        result: result.map(json).transpose()?,
        // Errors stored before kinds were kept read back as retryable (`AttemptError`'s serde).
        errors: serde_json::from_str(errors)?,
        unique_key: get(row, at::UNIQUE_KEY)?,
        trace_context: get(row, at::TRACE_CONTEXT)?,
        tags: get(row, at::TAGS)?,
        key_limits: key_limits.map(serde_json::from_str).transpose()?,
        step: step.map(serde_json::from_str).transpose()?,
        inputs: inputs.map(delivered).transpose()?.unwrap_or_default(),
        created_at: get(row, at::CREATED_AT)?,
        started_at: get(row, at::STARTED_AT)?,
        finished_at: get(row, at::FINISHED_AT)?,
    })
}

/// A row just leased by fetch: the job and its lease's token, or, for a row that does not
/// decode, the failure that sends it to dead with an error of kind decode saying why (no attempt
/// can succeed on it). Only the id and the lease token must decode for the row to be named.
pub(crate) fn leased(row: &PgRow) -> Result<Result<LeasedJob, Failure>, Error> {
    let id = JobId(get(row, at::ID)?);
    let token: Option<Uuid> = get(row, at::LEASE_TOKEN)?;
    let token =
        LeaseToken(token.ok_or_else(|| Error::backend("a fetched job came back without a lease"))?);
    // Only the fetch that reserves selects the column.
    let reserved = row.try_get(at::RESERVED).unwrap_or(false);
    Ok(match record_of(row, id) {
        Ok(record) => Ok(LeasedJob {
            record,
            token,
            reserved,
        }),
        Err(e) => Err(Failure::undecodable(LeaseRef { id, token }, &e)),
    })
}

/// The values delivered to a step's slots, from its `inputs` column: an object keyed by the
/// slot's number as text (which serde reads as the number), each value a JSON string whose
/// content is the delivered value's text, as it was written (see `apply_step_effects`,
/// migration 0021).
fn delivered(text: &str) -> Result<BTreeMap<u32, Json>, Error> {
    let slots: BTreeMap<u32, String> = serde_json::from_str(text)?;
    slots
        .into_iter()
        .map(|(slot, value)| Ok((slot, json(value)?)))
        .collect()
}

/// JSON text from a `json` column, kept as it was stored.
fn json(text: String) -> Result<Json, Error> {
    Ok(RawValue::from_string(text)?)
}

/// A `u32` count as an `integer` column (saturating).
pub(crate) fn int4(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// A job's workflow step as the `step` column stores it (JSON text), `None` for an ordinary job.
pub(crate) fn step(job: &NewJob) -> Result<Option<String>, Error> {
    Ok(job.step.as_deref().map(serde_json::to_string).transpose()?)
}

/// A payload version from its `integer` column (which no statement makes negative).
pub(crate) fn payload_version(stored: i32) -> Result<u32, Error> {
    u32::try_from(stored).map_err(|_| Error::backend(format!("{stored} is no payload version")))
}

/// A duration as a `bigint` of milliseconds (saturating).
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Text PostgreSQL can store: NUL characters become U+FFFD.
fn storable(text: &str) -> String {
    text.replace('\0', "\u{FFFD}")
}

/// An error report as the JSON object the error history stores (`kind`, `message`, `chain`),
/// with its texts made storable (`jsonb` holds no NUL).
pub(crate) fn report(report: &ErrorReport) -> Result<String, Error> {
    let stored = ErrorReport {
        kind: report.kind,
        message: storable(&report.message),
        chain: report
            .chain
            .iter()
            .map(String::as_str)
            .map(storable)
            .collect(),
    };
    Ok(serde_json::to_string(&stored)?)
}

#[cfg(test)]
mod tests {
    use super::at;
    use crate::sql::RECORD;

    #[test]
    fn the_positions_are_those_of_the_record_columns() {
        let named = [
            (at::ID, "id"),
            (at::NAME, "name"),
            (at::QUEUE, "queue"),
            (at::PAYLOAD, "payload"),
            (at::VERSION, "version"),
            (at::PRIORITY, "priority"),
            (at::RUN_AT, "run_at"),
            (at::STATUS, "status"),
            (at::ATTEMPT, "attempt"),
            (at::MAX_ATTEMPTS, "max_attempts"),
            (at::BACKOFF, "backoff"),
            (at::TIMEOUT_MS, "timeout_ms"),
            (at::LEASE_WORKER, "lease_worker"),
            (at::LEASE_TOKEN, "lease_token"),
            (at::LEASE_EXPIRES_AT, "lease_expires_at"),
            (at::PROGRESS, "progress"),
            (at::RESULT, "result"),
            (at::ERRORS, "errors"),
            (at::UNIQUE_KEY, "unique_key"),
            (at::TRACE_CONTEXT, "trace_context"),
            (at::TAGS, "tags"),
            (at::CREATED_AT, "created_at"),
            (at::STARTED_AT, "started_at"),
            (at::FINISHED_AT, "finished_at"),
            (at::KEY_LIMITS, "key_limits"),
            (at::STEP, "step"),
            (at::INPUTS, "inputs"),
        ];
        // Each column as the row names it: its alias, else its name after `j.`.
        let columns: Vec<&str> = RECORD
            .split(',')
            .map(|c| {
                let c = c.trim();
                c.rsplit_once(" AS ")
                    .map_or(c.trim_start_matches("j."), |(_, alias)| alias)
            })
            .collect();
        assert_eq!(columns.len(), named.len(), "{columns:?}");
        for (position, name) in named {
            assert_eq!(columns[position], name, "column {position}");
        }
        assert_eq!(at::RESERVED, columns.len(), "`reserved` follows them");
    }
}
