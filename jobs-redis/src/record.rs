//! How a job is stored, and its conversion to and from `JobRecord`.
//!
//! A job is a hash of short fields, so Redis keeps it in its compact listpack encoding (which
//! holds only while every value is at most `hash-max-listpack-value`, 64 bytes by default),
//! plus side keys for what may be long: the payload (a string), a result longer than 64 bytes
//! (a string; shorter ones stay in the hash) and the attempts' errors (a list).
//!
//! | field | meaning                      | field | meaning                          |
//! |-------|------------------------------|-------|----------------------------------|
//! | `n`   | name                         | `w`   | lease: worker                    |
//! | `pr`  | priority                     | `k`   | lease: token                     |
//! | `ra`  | run_at                       | `le`  | lease: expiry                    |
//! | `s`   | status (`s p r c d x`)       | `pg`  | progress (absent while 0)        |
//! | `a`   | attempt (absent while 0)     | `res` | result of at most 64 bytes       |
//! | `ma`  | max attempts                 | `ne`  | number of errors (absent if 0)   |
//! | `b`   | backoff (`e1000m60000j`)     | `u`   | unique key                       |
//! | `t`   | timeout in ms                | `tc`  | trace context                    |
//! | `c`   | created_at                   | `st`  | started_at                       |
//! | `f`   | finished_at                  |       |                                  |
//!
//! Each error is `attempt:at:message`. Times are microseconds since the Unix epoch (the
//! precision PostgreSQL keeps too); ids and lease tokens are UUIDs in their 32-digit hex form,
//! which sorts like the UUID.

use std::collections::HashMap;
use std::time::Duration;

use chrono::DateTime;
use jobs_core::{
    AttemptError, Backoff, BackoffKind, Error, JobId, JobRecord, Json, Lease, LeaseToken, NewJob,
    Timestamp,
};
use redis::ScriptInvocation;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::keys::status_from_code;

/// A time as stored: microseconds since the epoch.
pub(crate) fn micros(t: Timestamp) -> i64 {
    t.timestamp_micros()
}

/// `now + d`, saturating far in the future.
pub(crate) fn later(now: Timestamp, d: Duration) -> Timestamp {
    chrono::Duration::from_std(d)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .unwrap_or(DateTime::<chrono::Utc>::MAX_UTC)
}

/// A job id as stored.
pub(crate) fn id_text(id: JobId) -> String {
    id.0.simple().to_string()
}

/// A lease token as stored.
pub(crate) fn token_text(token: LeaseToken) -> String {
    token.0.simple().to_string()
}

/// Parses a stored job id.
pub(crate) fn parse_id(text: &str) -> Result<JobId, Error> {
    Uuid::parse_str(text)
        .map(JobId)
        .map_err(|e| corrupt(text, format!("bad id: {e}")))
}

/// Appends a new job to a script's arguments in the form `insert` of lib.lua reads: id, unique
/// key, priority, run_at, payload, the number of field pairs, then the pairs.
pub(crate) fn push_job(inv: &mut ScriptInvocation<'_>, job: &NewJob) {
    let unique = job
        .unique_key
        .as_ref()
        .map_or(String::new(), |key| format!("={key}"));
    inv.arg(id_text(job.id))
        .arg(unique)
        .arg(job.priority)
        .arg(micros(job.run_at))
        .arg(job.payload.get());
    let timeout = job.timeout.map(|t| t.as_millis() as u64);
    let pairs = 3 + usize::from(timeout.is_some()) + usize::from(job.trace_context.is_some());
    inv.arg(pairs)
        .arg("n")
        .arg(&job.name)
        .arg("ma")
        .arg(job.max_attempts)
        .arg("b")
        .arg(encode_backoff(&job.backoff));
    if let Some(ms) = timeout {
        inv.arg("t").arg(ms);
    }
    if let Some(trace) = &job.trace_context {
        inv.arg("tc").arg(trace);
    }
}

/// A backoff in a few bytes: the kind's initial, the base in ms, then `m` and the cap in ms if
/// capped, then `j` if jittered. `exponential(1s)` is `e1000`.
pub(crate) fn encode_backoff(b: &Backoff) -> String {
    let kind = match b.kind {
        BackoffKind::Fixed => 'f',
        BackoffKind::Linear => 'l',
        BackoffKind::Exponential => 'e',
    };
    let mut text = format!("{kind}{}", b.base.as_millis());
    if let Some(max) = b.max {
        text.push_str(&format!("m{}", max.as_millis()));
    }
    if b.jitter {
        text.push('j');
    }
    text
}

/// Reads what [`encode_backoff`] wrote.
pub(crate) fn decode_backoff(text: &str) -> Option<Backoff> {
    let mut backoff = match text.get(..1)? {
        "f" => Backoff::fixed(Duration::ZERO),
        "l" => Backoff::linear(Duration::ZERO),
        "e" => Backoff::exponential(Duration::ZERO),
        _ => return None,
    };
    let rest = &text[1..];
    let (rest, jitter) = match rest.strip_suffix('j') {
        Some(rest) => (rest, true),
        None => (rest, false),
    };
    let (base, max) = match rest.split_once('m') {
        Some((base, max)) => (base, Some(max.parse().ok()?)),
        None => (rest, None),
    };
    backoff.base = Duration::from_millis(base.parse().ok()?);
    backoff.max = max.map(Duration::from_millis);
    backoff.jitter = jitter;
    Some(backoff)
}

fn corrupt(id: &str, what: impl std::fmt::Display) -> Error {
    Error::backend(format!("stored job {id} is corrupt: {what}"))
}

/// Everything stored of one job.
pub(crate) struct Stored {
    /// The hash, as the flat field/value list of `HGETALL` (empty if the job does not exist).
    pub fields: Vec<String>,
    /// The payload.
    pub payload: Option<String>,
    /// A result too long for the hash.
    pub long_result: Option<String>,
    /// The errors, oldest first.
    pub errors: Vec<String>,
}

impl Stored {
    /// Adds the commands reading job `id` to `pipe`: four replies, for [`Stored::from_replies`].
    pub fn read(pipe: &mut redis::Pipeline, keys: &crate::keys::Keys, queue: &str, id: &str) {
        pipe.cmd("HGETALL")
            .arg(keys.job(queue, id))
            .get(keys.side(queue, 'p', id))
            .get(keys.side(queue, 'r', id))
            .lrange(keys.side(queue, 'e', id), 0, -1);
    }

    /// The stored jobs from the replies of [`Stored::read`], `None` where a job does not exist.
    pub fn from_replies(replies: Vec<redis::Value>) -> Result<Vec<Option<Stored>>, Error> {
        replies
            .chunks_exact(4)
            .map(|r| {
                let (fields, payload, long_result, errors): (
                    Vec<String>,
                    Option<String>,
                    Option<String>,
                    Vec<String>,
                ) = redis::from_redis_value(redis::Value::Array(r.to_vec()))
                    .map_err(Error::backend)?;
                Ok((!fields.is_empty()).then_some(Stored {
                    fields,
                    payload,
                    long_result,
                    errors,
                }))
            })
            .collect()
    }

    /// The record of job `id` of `queue`.
    pub fn record(&self, id: &str, queue: &str) -> Result<JobRecord, Error> {
        Fields::new(id, self).record(queue)
    }
}

/// A job's hash as a map, with its side values.
struct Fields<'a> {
    id: &'a str,
    map: HashMap<&'a str, &'a str>,
    stored: &'a Stored,
}

impl<'a> Fields<'a> {
    fn new(id: &'a str, stored: &'a Stored) -> Self {
        let map = stored
            .fields
            .chunks_exact(2)
            .map(|kv| (kv[0].as_str(), kv[1].as_str()))
            .collect();
        Fields { id, map, stored }
    }

    fn opt(&self, field: &str) -> Option<&'a str> {
        self.map.get(field).copied()
    }

    fn text(&self, field: &str) -> Result<&'a str, Error> {
        self.opt(field)
            .ok_or_else(|| corrupt(self.id, format!("field `{field}` is missing")))
    }

    fn number<T: std::str::FromStr>(&self, field: &str) -> Result<T, Error> {
        let text = self.text(field)?;
        text.parse()
            .map_err(|_| corrupt(self.id, format!("field `{field}` is not a number: {text}")))
    }

    fn opt_number<T: std::str::FromStr>(&self, field: &str) -> Result<Option<T>, Error> {
        self.opt(field).map(|_| self.number(field)).transpose()
    }

    fn time(&self, field: &str) -> Result<Timestamp, Error> {
        let us = self.number(field)?;
        DateTime::from_timestamp_micros(us)
            .ok_or_else(|| corrupt(self.id, format!("field `{field}` is out of range: {us}")))
    }

    fn opt_time(&self, field: &str) -> Result<Option<Timestamp>, Error> {
        self.opt(field).map(|_| self.time(field)).transpose()
    }

    fn json(&self, text: &str) -> Result<Json, Error> {
        RawValue::from_string(text.to_string()).map_err(|e| corrupt(self.id, e))
    }

    fn errors(&self) -> Result<Vec<AttemptError>, Error> {
        self.stored
            .errors
            .iter()
            .map(|text| {
                let mut parts = text.splitn(3, ':');
                let bad = || corrupt(self.id, format!("error `{text}` is malformed"));
                let attempt = parts.next().and_then(|a| a.parse().ok()).ok_or_else(bad)?;
                let at = parts
                    .next()
                    .and_then(|a| a.parse().ok())
                    .and_then(DateTime::from_timestamp_micros)
                    .ok_or_else(bad)?;
                let message = parts.next().ok_or_else(bad)?.to_string();
                Ok(AttemptError {
                    attempt,
                    message,
                    at,
                })
            })
            .collect()
    }

    fn lease(&self) -> Result<Option<Lease>, Error> {
        let (Some(worker), Some(token)) = (self.opt("w"), self.opt("k")) else {
            return Ok(None);
        };
        let token = Uuid::parse_str(token)
            .map(LeaseToken)
            .map_err(|e| corrupt(self.id, format!("bad lease token: {e}")))?;
        Ok(Some(Lease {
            worker: worker.to_string(),
            token,
            expires_at: self.time("le")?,
        }))
    }

    fn record(&self, queue: &str) -> Result<JobRecord, Error> {
        let status = self.text("s")?;
        let backoff = self.text("b")?;
        Ok(JobRecord {
            id: parse_id(self.id)?,
            name: self.text("n")?.to_string(),
            queue: queue.to_string(),
            payload: self.json(
                self.stored
                    .payload
                    .as_deref()
                    .ok_or_else(|| corrupt(self.id, "the payload is missing"))?,
            )?,
            priority: self.number("pr")?,
            run_at: self.time("ra")?,
            status: status_from_code(status)
                .ok_or_else(|| corrupt(self.id, format!("unknown status `{status}`")))?,
            attempt: self.opt_number("a")?.unwrap_or(0),
            max_attempts: self.number("ma")?,
            backoff: decode_backoff(backoff)
                .ok_or_else(|| corrupt(self.id, format!("bad backoff `{backoff}`")))?,
            timeout: self.opt_number("t")?.map(Duration::from_millis),
            lease: self.lease()?,
            progress: self.opt_number("pg")?.unwrap_or(0),
            result: self
                .opt("res")
                .or(self.stored.long_result.as_deref())
                .map(|r| self.json(r))
                .transpose()?,
            errors: self.errors()?,
            unique_key: self.opt("u").map(str::to_string),
            trace_context: self.opt("tc").map(str::to_string),
            created_at: self.time("c")?,
            started_at: self.opt_time("st")?,
            finished_at: self.opt_time("f")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoffs_round_trip() {
        let cases = [
            Backoff::exponential(Duration::from_secs(1)),
            Backoff::fixed(Duration::from_millis(5)),
            Backoff::linear(Duration::from_millis(1500)).max(Duration::from_secs(60)),
            Backoff {
                jitter: true,
                ..Backoff::exponential(Duration::from_millis(250)).max(Duration::from_secs(9))
            },
        ];
        for backoff in cases {
            let text = encode_backoff(&backoff);
            assert_eq!(decode_backoff(&text), Some(backoff), "{text}");
        }
        assert_eq!(encode_backoff(&cases[0]), "e1000");
        for bad in ["", "x100", "e", "e10m", "ejj"] {
            assert_eq!(decode_backoff(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_stored_job_reads_back() {
        let id = id_text(JobId::new());
        let fields: Vec<String> = [
            ("n", "email"),
            ("pr", "-3"),
            ("ra", "1893456000000000"),
            ("s", "d"),
            ("a", "2"),
            ("ma", "2"),
            ("b", "f5"),
            ("c", "1893456000000000"),
            ("f", "1893456000100000"),
            ("ne", "2"),
        ]
        .iter()
        .flat_map(|(k, v)| [k.to_string(), v.to_string()])
        .collect();
        let stored = Stored {
            fields,
            payload: Some(r#"{"to":"a@b"}"#.into()),
            long_result: None,
            errors: vec![
                "1:1893456000000001:first: with a colon".into(),
                "2:1893456000000002:second".into(),
            ],
        };
        let r = stored.record(&id, "q").unwrap();
        assert_eq!((r.priority, r.attempt, r.max_attempts), (-3, 2, 2));
        assert_eq!(r.status, jobs_core::JobStatus::Dead);
        assert_eq!(r.payload.get(), r#"{"to":"a@b"}"#);
        assert_eq!(r.errors[0].message, "first: with a colon");
        assert_eq!(r.errors[1].attempt, 2);
        assert_eq!(r.run_at.to_rfc3339(), "2030-01-01T00:00:00+00:00");
        assert!(r.lease.is_none() && r.result.is_none() && r.started_at.is_none());
        let missing = Stored {
            payload: None,
            ..stored
        };
        assert!(missing.record(&id, "q").is_err());
    }
}
