//! Rows to job records, and the few conversions between Rust and column types.

use std::collections::BTreeMap;
use std::time::Duration;

use jobs_core::{
    Error, ErrorReport, Failure, JobId, JobRecord, Json, Lease, LeaseRef, LeaseToken, LeasedJob,
    NewJob, Timestamp,
};
use serde_json::value::RawValue;
use sqlx::postgres::PgRow;
use sqlx::Row;
use uuid::Uuid;

use crate::error::db;

/// A record read with the `{record}` columns of [`Sql`](crate::sql::Sql). A lease is all three
/// lease columns: a completed job keeps its token alone, and has none. A row that does not
/// decode (a column of an unknown shape, written by hand or by another program) is an error
/// saying `stored job <id> is corrupt: <why>`.
pub(crate) fn record(row: &PgRow) -> Result<JobRecord, Error> {
    let id: Uuid = row.try_get("id").map_err(db)?;
    decode(row, JobId(id))
        .map_err(|e| Error::backend(format!("stored job {id} is corrupt: {}", e.detail())))
}

/// The record of job `id` from its row.
fn decode(row: &PgRow, id: JobId) -> Result<JobRecord, Error> {
    let token: Option<Uuid> = row.try_get("lease_token").map_err(db)?;
    let worker: Option<&str> = row.try_get("lease_worker").map_err(db)?;
    let expires_at: Option<Timestamp> = row.try_get("lease_expires_at").map_err(db)?;
    let lease = match (worker, token, expires_at) {
        (Some(worker), Some(token), Some(expires_at)) => Some(Lease {
            worker: worker.into(),
            token: LeaseToken(token),
            expires_at,
        }),
        _ => None,
    };
    let status: String = row.try_get("status").map_err(db)?;
    let backoff: String = row.try_get("backoff").map_err(db)?;
    let errors: String = row.try_get("errors").map_err(db)?;
    let result: Option<String> = row.try_get("result").map_err(db)?;
    let timeout_ms: Option<i64> = row.try_get("timeout_ms").map_err(db)?;
    let attempt: i32 = row.try_get("attempt").map_err(db)?;
    let max_attempts: i32 = row.try_get("max_attempts").map_err(db)?;
    let progress: i16 = row.try_get("progress").map_err(db)?;
    let key_limits: Option<String> = row.try_get("key_limits").map_err(db)?;
    let version: i32 = row.try_get("version").map_err(db)?;
    let step: Option<String> = row.try_get("step").map_err(db)?;
    let inputs: Option<String> = row.try_get("inputs").map_err(db)?;
    Ok(JobRecord {
        id,
        name: row.try_get::<&str, _>("name").map_err(db)?.into(),
        queue: row.try_get::<&str, _>("queue").map_err(db)?.into(),
        payload: json(row.try_get("payload").map_err(db)?)?,
        version: payload_version(version)?,
        priority: row.try_get("priority").map_err(db)?,
        run_at: row.try_get("run_at").map_err(db)?,
        status: status.parse()?,
        attempt: u32::try_from(attempt).unwrap_or(0),
        max_attempts: u32::try_from(max_attempts).unwrap_or(1),
        backoff: serde_json::from_str(&backoff)?,
        timeout: timeout_ms.map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0))),
        lease,
        progress: u8::try_from(progress.clamp(0, 100)).unwrap_or(0),
        result: result.map(json).transpose()?,
        // Errors stored before kinds were kept read back as retryable (`AttemptError`'s serde).
        errors: serde_json::from_str(&errors)?,
        unique_key: row.try_get("unique_key").map_err(db)?,
        trace_context: row.try_get("trace_context").map_err(db)?,
        tags: row.try_get("tags").map_err(db)?,
        key_limits: key_limits
            .map(|text| serde_json::from_str(&text))
            .transpose()?,
        step: step.map(|text| serde_json::from_str(&text)).transpose()?,
        inputs: inputs
            .map(|text| delivered(&text))
            .transpose()?
            .unwrap_or_default(),
        created_at: row.try_get("created_at").map_err(db)?,
        started_at: row.try_get("started_at").map_err(db)?,
        finished_at: row.try_get("finished_at").map_err(db)?,
    })
}

/// A row just leased by fetch: the job and its lease's token, or, for a row that does not
/// decode, the failure that sends it to dead with an error of kind decode saying why (no attempt
/// can succeed on it). Only the id and the lease token must decode for the row to be named.
pub(crate) fn leased(row: &PgRow) -> Result<Result<LeasedJob, Failure>, Error> {
    let id = JobId(row.try_get("id").map_err(db)?);
    let token: Option<Uuid> = row.try_get("lease_token").map_err(db)?;
    let token =
        LeaseToken(token.ok_or_else(|| Error::backend("a fetched job came back without a lease"))?);
    // Only the fetch that reserves selects the column.
    let reserved = row.try_get("reserved").unwrap_or(false);
    Ok(match record(row) {
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
/// content is the delivered value's text, as it was written (see `sql/effects.sql`).
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
