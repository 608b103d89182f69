//! How a job is stored, and its conversion to and from `JobRecord`.
//!
//! A job is a hash of short fields, so Redis keeps it in its compact listpack encoding (which
//! holds only while every value is at most `hash-max-listpack-value`, 64 bytes by default),
//! plus side keys for what may be long: a payload longer than two values of 64 bytes (cut
//! between characters) or a result longer than 64 (a string each; shorter ones stay in the hash)
//! and the attempts' errors (a list).
//!
//! | field | meaning                          | field | meaning                          |
//! |-------|----------------------------------|-------|----------------------------------|
//! | `m`   | what never changes (below)       | `w`   | lease: worker                    |
//! | `pr`  | priority                         | `l`   | lease: `token:expiry`            |
//! | `ra`  | run_at                           | `pg`  | progress (absent while 0)        |
//! | `s`   | status (`w s p r c d x`)         | `wf`  | workflow step, JSON (absent if none) |
//! | `a`   | attempt (absent while 0)         | `res` | result of at most 64 bytes       |
//! | `c`   | created_at                       | `ne`  | number of errors (absent if 0)   |
//! | `st`  | started_at                       | `u`   | unique key                       |
//! | `f`   | finished_at                      | `tc`  | trace context                    |
//! | `k`   | key limits (absent if none)      | `tg`  | tags, a JSON array (absent if none) |
//! | `v`   | payload version (absent while 1) | `i<n>` | value delivered to slot n (steps) |
//! | `p`   | payload, or its first part       | `wn`  | slots filled so far (steps)      |
//! | `p2`  | the payload's second part        |       |                                  |
//!
//! `wf` is the job's [`Step`] as serde writes it, stored only for a workflow step, so an
//! ordinary job costs its enqueue no field more. A step with slots is stored waiting (`w`, in no
//! set but `all`); each delivery (see effects.lua) writes its slot's value as the raw text of
//! the result (or `null`) in `i<slot>` and counts it in `wn`, and the last one makes the job
//! pending. A step's hash, whose `wf` is usually longer than 64 bytes, is kept in Redis'
//! hashtable encoding rather than the listpack (a few hundred bytes more per step job).
//! `m` is `max attempts|backoff|timeout in ms|name` (the timeout empty when there is none, the
//! name last so that it may hold any character): one hash entry, one script argument and one
//! reply element rather than four (a name of up to about 50 bytes keeps it within 64). The
//! backoff is written as `e1000m60000j` (see [`write_backoff`]). The lease fields of a
//! completed job are emptied rather than deleted (one command fewer per completion), but `l`
//! keeps a mark of the token of the lease it was completed under (16 base64 digits, no expiry),
//! so that a repeated completion is recognised (see complete.lua); such a job has no lease.
//! `k` is `concurrency|rate limit|rate period in ms|key` (see `flow::encode_key_limits`).
//! `v` is written only for a payload version other than 1 (the version of every job stored
//! before versions existed, and of nearly every job), so the common job costs its enqueue no
//! field, argument or byte more; a debounced job folded into a waiting one carries its version
//! over with its payload (see coalesce.lua).
//!
//! A payload that is not JSON (written by hand, or by another program, under this layout) is
//! corrupt: fetch fails such a job at once as dead with an error of kind `decode` (see
//! [`PayloadRead::Strict`]), so it never reaches a handler, while `read` and `list` show its
//! payload as a JSON string holding the raw text (see [`PayloadRead::Lenient`]), so that the
//! job can still be inspected, retried after a repair, or deleted.
//!
//! Each error is a JSON object, `{"a":attempt,"t":at,"kind":…,"message":…,"chain":[…]}` (see
//! [`StoredError`]); errors stored before kinds were kept are `attempt:at:message` and read back
//! as retryable. Times are microseconds since the Unix epoch (the precision PostgreSQL keeps
//! too); ids and lease tokens are UUIDs in their 32-digit hex form, which sorts like the UUID.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use chrono::DateTime;
use jobs_core::workflow::Step;
use jobs_core::{
    first_version, AttemptError, Backoff, BackoffKind, Error, ErrorKind, ErrorReport, JobId,
    JobRecord, JobStatus, Json, Lease, LeaseToken, NewJob, Timestamp, DEFAULT_PRIORITY,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::flow::{decode_key_limits, encode_key_limits, job_flow};
use crate::ids::id_text;
use crate::keys::status_from_code;
use crate::names::Names;

/// A time as stored: microseconds since the epoch.
pub(crate) fn micros(t: Timestamp) -> i64 {
    t.timestamp_micros()
}

/// A time as a read gives it back: cut to whole microseconds.
pub(crate) fn stored_time(t: Timestamp) -> Timestamp {
    DateTime::from_timestamp_micros(micros(t)).unwrap_or(t)
}

/// Parses a stored job id.
pub(crate) fn parse_id(text: &str) -> Result<JobId, Error> {
    Uuid::parse_str(text)
        .map(JobId)
        .map_err(|e| corrupt(text, format!("bad id: {e}")))
}

/// Appends a new job to a script's arguments in the form `store_jobs` of store.lua reads: id,
/// ready-set member (empty when the job is scheduled), payload, its flow (see
/// [`job_flow`]), the number of arguments that follow, then the values of the hash's fields
/// `pr`, `ra` and `m` (whose names the script adds), then the other fields' names and values as
/// stored, so that the script only copies them (it adds the status, created_at and payload).
pub(crate) fn push_job(inv: &mut redis::Cmd, job: &NewJob, now: Timestamp) {
    let id = id_text(job.id);
    let run_at = micros(job.run_at);
    let member = match job.initial_status(now) {
        JobStatus::Pending => ready_member(run_at, &id),
        JobStatus::Waiting => WAITING.to_string(),
        _ => String::new(),
    };
    let versioned = job.version != first_version();
    inv.arg(id)
        .arg(member)
        .arg(job.payload.get())
        .arg(job_flow(job))
        .arg(3 + 2 * named_pairs(job))
        .arg(job.priority)
        .arg(run_at)
        .arg(encode_meta(job));
    // `store_jobs` looks for the unique key right after the three values above, and for the
    // tags last.
    if let Some(key) = &job.unique_key {
        inv.arg("u").arg(key);
    }
    if versioned {
        inv.arg("v").arg(job.version);
    }
    if let Some(trace) = &job.trace_context {
        inv.arg("tc").arg(trace);
    }
    if let Some(limits) = &job.key_limits {
        inv.arg("k").arg(encode_key_limits(limits));
    }
    if let Some(step) = &job.step {
        inv.arg("wf").arg(encode_step(step));
    }
    if !job.tags.is_empty() {
        inv.arg("tg").arg(encode_tags(&job.tags));
    }
}

/// How many field-value pairs of the hash [`push_job`] sends for `job` with their names.
fn named_pairs(job: &NewJob) -> usize {
    usize::from(job.unique_key.is_some())
        + usize::from(job.version != first_version())
        + usize::from(job.trace_context.is_some())
        + usize::from(job.key_limits.is_some())
        + usize::from(job.step.is_some())
        + usize::from(!job.tags.is_empty())
}

/// How many script arguments [`push_job`] adds for `job`.
pub(crate) fn job_arg_count(job: &NewJob) -> usize {
    8 + 2 * named_pairs(job)
}

/// The ready-set member argument of a job stored waiting (a workflow step with slots to fill):
/// no ready-set member is ever this short.
const WAITING: &str = "w";

/// The `wf` field: the step as JSON.
fn encode_step(step: &Step) -> String {
    serde_json::to_string(step).expect("steps serialize")
}

/// The `tg` field: the tags as a JSON array.
pub(crate) fn encode_tags(tags: &[String]) -> String {
    serde_json::to_string(tags).expect("strings serialize")
}

/// An error report as the scripts get it: the JSON object they store with the attempt number
/// and the time prepended (see [`StoredError`]).
pub(crate) fn encode_report(report: &ErrorReport) -> String {
    serde_json::to_string(report).expect("error reports serialize")
}

/// One attempt's error as stored (states.lua's `finish_attempt` writes it).
#[derive(Deserialize)]
struct StoredError {
    /// The attempt.
    a: u32,
    /// When it failed, in microseconds.
    t: i64,
    #[serde(default)]
    kind: ErrorKind,
    message: String,
    #[serde(default)]
    chain: Vec<String>,
}

/// The `m` field: what never changes of a job but its payload, in one value (one hash entry,
/// one argument, one reply element rather than four): `max attempts|backoff|timeout ms|name`.
/// The name comes last, so it may hold any character.
pub(crate) fn encode_meta(job: &NewJob) -> String {
    let mut meta = String::with_capacity(24 + job.name.len());
    write!(meta, "{}|", job.max_attempts).expect("a String takes any text");
    write_backoff(&mut meta, &job.backoff);
    meta.push('|');
    if let Some(timeout) = job.timeout {
        write!(meta, "{}", timeout.as_millis()).expect("a String takes any text");
    }
    meta.push('|');
    meta.push_str(&job.name);
    meta
}

/// What the `m` field holds.
struct Meta<'a> {
    max_attempts: u32,
    backoff: Backoff,
    timeout: Option<Duration>,
    name: &'a str,
}

/// Reads what [`encode_meta`] wrote.
fn decode_meta(text: &str) -> Option<Meta<'_>> {
    let mut parts = text.splitn(4, '|');
    let max_attempts = parts.next()?.parse().ok()?;
    let backoff = decode_backoff(parts.next()?)?;
    let timeout = match parts.next()? {
        "" => None,
        ms => Some(Duration::from_millis(ms.parse().ok()?)),
    };
    let name = parts.next()?;
    Some(Meta {
        max_attempts,
        backoff,
        timeout,
        name,
    })
}

/// A job's member in its queue's ready set: run_at as 14 hex digits, then the id (lib.lua's
/// `ready_member`), so that members of one priority sort by run_at, then id.
pub(crate) fn ready_member(run_at: i64, id: &str) -> String {
    let mut member = String::with_capacity(14 + id.len());
    write!(member, "{:014x}", run_at.max(0)).expect("a String takes any text");
    member.push_str(id);
    member
}

/// Appends a backoff in a few bytes to `text`: the kind's initial, the base in ms, then `m` and
/// the cap in ms if capped, then `j` if jittered. `exponential(1s)` is `e1000`.
fn write_backoff(text: &mut String, b: &Backoff) {
    let kind = match b.kind {
        BackoffKind::Fixed => 'f',
        BackoffKind::Linear => 'l',
        BackoffKind::Exponential => 'e',
    };
    write!(text, "{kind}{}", b.base.as_millis()).expect("a String takes any text");
    if let Some(max) = b.max {
        write!(text, "m{}", max.as_millis()).expect("a String takes any text");
    }
    if b.jitter {
        text.push('j');
    }
}

/// Reads what [`write_backoff`] wrote.
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

/// How a record's payload is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PayloadRead {
    /// A payload that is not JSON makes the job corrupt (fetch: a handler gets only JSON).
    Strict,
    /// A payload that is not JSON reads back as a JSON string holding its raw text (read and
    /// list: a corrupt job stays visible).
    Lenient,
}

/// The replies of [`Stored::read`]: the hash (as pairs, so that a RESP3 map reads as a RESP2
/// array does), the payload, the long result and the errors.
type Replies = (
    Vec<(String, String)>,
    Option<String>,
    Option<String>,
    Vec<String>,
);

/// Everything stored of one job, as owned text (a read) or as text borrowed from a reply (a
/// fetch, see leases.rs).
pub(crate) struct Stored<S = String> {
    /// The hash, as the flat field/value list of `HGETALL` (empty if the job does not exist).
    pub fields: Vec<S>,
    /// A payload too long for the hash.
    pub payload: Option<S>,
    /// A result too long for the hash.
    pub long_result: Option<S>,
    /// The errors, oldest first.
    pub errors: Vec<S>,
}

impl Stored {
    /// Adds the commands reading job `id` to `pipe`: four replies, for [`Stored::from_replies`].
    pub(crate) fn read(
        pipe: &mut redis::Pipeline,
        keys: &crate::keys::Keys,
        queue: &str,
        id: &str,
    ) {
        pipe.cmd("HGETALL")
            .arg(keys.job(queue, id))
            .get(keys.side(queue, 'p', id))
            .get(keys.side(queue, 'r', id))
            .lrange(keys.side(queue, 'e', id), 0, -1);
    }

    /// The stored jobs from the replies of [`Stored::read`], `None` where a job does not exist.
    pub(crate) fn from_replies(replies: Vec<redis::Value>) -> Result<Vec<Option<Stored>>, Error> {
        replies
            .chunks_exact(4)
            .map(|r| {
                let (fields, payload, long_result, errors): Replies =
                    redis::from_redis_value(redis::Value::Array(r.to_vec()))
                        .map_err(Error::backend)?;
                Ok((!fields.is_empty()).then(|| Stored {
                    fields: fields.into_iter().flat_map(|(k, v)| [k, v]).collect(),
                    payload,
                    long_result,
                    errors,
                }))
            })
            .collect()
    }
}

impl<S: AsRef<str>> Stored<S> {
    /// The record of job `id` of `queue`, its payload read as `payload` says.
    pub(crate) fn record(
        &self,
        id: &str,
        queue: &str,
        payload: PayloadRead,
    ) -> Result<JobRecord, Error> {
        self.record_in(id, &mut Names::new(queue), payload)
    }

    /// As [`record`](Self::record), for one of many records read together: its names are
    /// taken from `names`, which the others share.
    pub(crate) fn record_in(
        &self,
        id: &str,
        names: &mut Names,
        payload: PayloadRead,
    ) -> Result<JobRecord, Error> {
        Fields::new(id, self).record(names, payload)
    }
}

/// A job's hash, with its side values. A hash holds a dozen short fields or so, which one pass
/// puts in the slots of the fields a record reads (a fetch reads every job's hash this way, and
/// a record looks up some twenty fields).
struct Fields<'a, S> {
    id: &'a str,
    stored: &'a Stored<S>,
    /// The value of each field of [`slot_of`], the first one the hash lists.
    slots: [Option<&'a str>; SLOTS],
}

/// The slots of [`Fields`].
const SLOTS: usize = 20;

/// The slot of `field` among those a record reads.
fn slot_of(field: &str) -> Option<usize> {
    Some(match field {
        "s" => 0,
        "m" => 1,
        "p" => 2,
        "p2" => 3,
        "v" => 4,
        "pr" => 5,
        "ra" => 6,
        "a" => 7,
        "w" => 8,
        "l" => 9,
        "pg" => 10,
        "res" => 11,
        "u" => 12,
        "tc" => 13,
        "tg" => 14,
        "k" => 15,
        "wf" => 16,
        "c" => 17,
        "st" => 18,
        "f" => 19,
        _ => return None,
    })
}

impl<'a, S: AsRef<str>> Fields<'a, S> {
    fn new(id: &'a str, stored: &'a Stored<S>) -> Self {
        let mut fields = Fields {
            id,
            stored,
            slots: [None; SLOTS],
        };
        for (name, value) in fields.pairs() {
            if let Some(slot) = slot_of(name) {
                fields.slots[slot].get_or_insert(value);
            }
        }
        fields
    }

    /// The hash's fields and values.
    fn pairs(&self) -> impl Iterator<Item = (&'a str, &'a str)> {
        self.stored
            .fields
            .chunks_exact(2)
            .map(|kv| (kv[0].as_ref(), kv[1].as_ref()))
    }

    fn opt(&self, field: &str) -> Option<&'a str> {
        match slot_of(field) {
            Some(slot) => self.slots[slot],
            None => self
                .pairs()
                .find(|(name, _)| *name == field)
                .map(|(_, v)| v),
        }
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
                let text = text.as_ref();
                let bad = || corrupt(self.id, format!("error `{text}` is malformed"));
                let time = |us: i64| DateTime::from_timestamp_micros(us).ok_or_else(bad);
                if text.starts_with('{') {
                    let e: StoredError = serde_json::from_str(text).map_err(|_| bad())?;
                    return Ok(AttemptError {
                        attempt: e.a,
                        at: time(e.t)?,
                        kind: e.kind,
                        message: e.message,
                        chain: e.chain,
                    });
                }
                // The form stored before kinds were kept: `attempt:at:message`.
                let mut parts = text.splitn(3, ':');
                let attempt = parts.next().and_then(|a| a.parse().ok()).ok_or_else(bad)?;
                let at = parts.next().and_then(|a| a.parse().ok()).ok_or_else(bad)?;
                let message = parts.next().ok_or_else(bad)?;
                Ok(AttemptError::new(
                    attempt,
                    time(at)?,
                    ErrorReport::new(ErrorKind::Retryable, message),
                ))
            })
            .collect()
    }

    fn tags(&self) -> Result<Vec<String>, Error> {
        self.opt("tg").map_or(Ok(Vec::new()), |tags| {
            serde_json::from_str(tags).map_err(|e| corrupt(self.id, format!("bad tags: {e}")))
        })
    }

    /// The workflow step (`wf`), if any.
    fn step(&self) -> Result<Option<Box<Step>>, Error> {
        self.opt("wf")
            .map(|wf| {
                serde_json::from_str(wf).map_err(|e| corrupt(self.id, format!("bad step: {e}")))
            })
            .transpose()
    }

    /// The values delivered to a step's slots (`i<slot>`, only ever written beside `wf`).
    fn inputs(&self) -> Result<BTreeMap<u32, Json>, Error> {
        if self.opt("wf").is_none() {
            return Ok(BTreeMap::new());
        }
        self.pairs()
            .filter_map(|(field, value)| {
                let slot = field.strip_prefix('i')?.parse::<u32>().ok()?;
                Some(self.json(value).map(|v| (slot, v)))
            })
            .collect()
    }

    fn lease(&self) -> Result<Option<Lease>, Error> {
        // A completed job's worker is empty rather than absent, and its `l` holds only a mark of
        // the token it was completed under (see complete.lua): no lease.
        let (Some(worker), Some(lease)) = (
            self.opt("w").filter(|w| !w.is_empty()),
            self.opt("l").filter(|l| !l.is_empty()),
        ) else {
            return Ok(None);
        };
        let bad = |what: String| corrupt(self.id, format!("bad lease `{lease}`: {what}"));
        let (token, expiry) = lease
            .split_once(':')
            .ok_or_else(|| bad("no expiry".into()))?;
        let token = Uuid::parse_str(token)
            .map(LeaseToken)
            .map_err(|e| bad(e.to_string()))?;
        let expires_at = expiry
            .parse()
            .ok()
            .and_then(DateTime::from_timestamp_micros)
            .ok_or_else(|| bad("bad expiry".into()))?;
        Ok(Some(Lease {
            worker: worker.into(),
            token,
            expires_at,
        }))
    }

    /// The payload (from the hash, in one or two fields, else its own key), as `read` says.
    fn payload(&self, read: PayloadRead) -> Result<Json, Error> {
        let joined;
        let text = match (self.opt("p"), self.opt("p2")) {
            (Some(first), Some(rest)) => {
                joined = [first, rest].concat();
                &joined
            }
            (first, _) => first
                .or(self.stored.payload.as_ref().map(AsRef::as_ref))
                .ok_or_else(|| corrupt(self.id, "the payload is missing"))?,
        };
        match self.json(text) {
            Err(_) if read == PayloadRead::Lenient => {
                let quoted = serde_json::to_string(text).expect("strings serialize");
                self.json(&quoted)
            }
            parsed => parsed,
        }
    }

    fn record(&self, names: &mut Names, payload: PayloadRead) -> Result<JobRecord, Error> {
        let status = self.text("s")?;
        let meta = self.text("m")?;
        let meta =
            decode_meta(meta).ok_or_else(|| corrupt(self.id, format!("bad field `m`: {meta}")))?;
        let run_at = self.time("ra")?;
        Ok(JobRecord {
            id: parse_id(self.id)?,
            name: names.job(meta.name),
            queue: names.queue(),
            payload: self.payload(payload)?,
            version: self.opt_number("v")?.unwrap_or_else(first_version),
            priority: self.opt_number("pr")?.unwrap_or(DEFAULT_PRIORITY),
            run_at,
            status: status_from_code(status)
                .ok_or_else(|| corrupt(self.id, format!("unknown status `{status}`")))?,
            attempt: self.opt_number("a")?.unwrap_or(0),
            max_attempts: meta.max_attempts,
            backoff: meta.backoff,
            timeout: meta.timeout,
            lease: self.lease()?,
            progress: self.opt_number("pg")?.unwrap_or(0),
            result: self
                .opt("res")
                .or(self.stored.long_result.as_ref().map(AsRef::as_ref))
                .map(|r| self.json(r))
                .transpose()?,
            errors: self.errors()?,
            unique_key: self.opt("u").map(str::to_string),
            trace_context: self.opt("tc").map(str::to_string),
            tags: self.tags()?,
            key_limits: self
                .opt("k")
                .map(|k| {
                    decode_key_limits(k)
                        .ok_or_else(|| corrupt(self.id, format!("bad key limits `{k}`")))
                })
                .transpose()?,
            step: self.step()?,
            inputs: self.inputs()?,
            // Absent when it equals run_at.
            created_at: match self.opt("c") {
                Some(_) => self.time("c")?,
                None => run_at,
            },
            started_at: self.opt_time("st")?,
            finished_at: self.opt_time("f")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn each_field_read_has_a_slot_of_its_own_and_the_first_listed_wins() {
        let names = [
            "s", "m", "p", "p2", "v", "pr", "ra", "a", "w", "l", "pg", "res", "u", "tc", "tg", "k",
            "wf", "c", "st", "f",
        ];
        let mut slots: Vec<usize> = names.iter().map(|n| slot_of(n).unwrap()).collect();
        slots.sort_unstable();
        assert_eq!(slots, (0..SLOTS).collect::<Vec<_>>());
        assert_eq!(slot_of("i1"), None);
        let stored = Stored {
            fields: vec!["pr", "3", "x", "1", "pr", "4", "i1", "7"],
            payload: None,
            long_result: None,
            errors: Vec::new(),
        };
        let fields = Fields::new("id", &stored);
        assert_eq!(fields.opt("pr"), Some("3"));
        assert_eq!(fields.opt("i1"), Some("7"));
        assert_eq!(fields.opt("v"), None);
    }

    #[test]
    fn records_read_together_share_their_names() {
        let stored = |name: &str| Stored {
            fields: [
                "m",
                &format!("1|f5||{name}"),
                "ra",
                "1893456000000000",
                "s",
                "p",
            ]
            .map(String::from)
            .to_vec(),
            payload: Some("null".to_string()),
            long_result: None,
            errors: Vec::new(),
        };
        let mut names = Names::new("q");
        let mut read = |name: &str| {
            let id = id_text(JobId::new());
            stored(name)
                .record_in(&id, &mut names, PayloadRead::Strict)
                .unwrap()
        };
        let (a1, b, a2) = (read("a"), read("b"), read("a"));
        assert_eq!((&*a1.name, &*b.name, &*a2.name), ("a", "b", "a"));
        assert!(Arc::ptr_eq(&a1.name, &a2.name) && !Arc::ptr_eq(&a1.name, &b.name));
        assert!(Arc::ptr_eq(&a1.queue, &b.queue) && &*a1.queue == "q");
        // Past the names kept, a name is still itself, allocated per record.
        let many: Vec<String> = (0..2 * Names::KEPT).map(|i| format!("n{i}")).collect();
        let records: Vec<JobRecord> = many.iter().map(|n| read(n)).collect();
        for (record, name) in records.iter().zip(&many) {
            assert_eq!(&*record.name, name);
        }
        let last = read(many.last().unwrap());
        assert_eq!(last.name, records.last().unwrap().name);
        assert!(!Arc::ptr_eq(&last.name, &records.last().unwrap().name));
        assert!(Arc::ptr_eq(&read("n0").name, &records[0].name));
    }

    fn encode_backoff(b: &Backoff) -> String {
        let mut text = String::new();
        write_backoff(&mut text, b);
        text
    }

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
    fn reports_are_stored_as_the_scripts_extend_them() {
        let report = ErrorReport {
            kind: ErrorKind::Panic,
            message: "boom".into(),
            chain: vec!["inner".into()],
        };
        let encoded = encode_report(&report);
        // What states.lua's `finish_attempt` stores.
        let stored = format!("{{\"a\":2,\"t\":7,{}", &encoded[1..]);
        let e: StoredError = serde_json::from_str(&stored).unwrap();
        assert_eq!((e.a, e.t, e.kind), (2, 7, ErrorKind::Panic));
        assert_eq!(
            (e.message.as_str(), e.chain),
            ("boom", vec!["inner".to_string()])
        );
    }

    #[test]
    fn a_stored_step_reads_back_with_its_inputs() {
        use jobs_core::workflow::{Effect, StepRole, WorkflowId};
        let step = Step {
            workflow: WorkflowId::new(),
            index: 2,
            role: StepRole::Compensation { stage: 0 },
            group: false,
            slots: 2,
            input: None,
            on_complete: vec![Effect::Cancel {
                job: JobId::new(),
                queue: "other".into(),
            }],
            on_dead: Vec::new(),
        };
        let id = id_text(JobId::new());
        let big = r#"{"n":12345678901234567890}"#;
        let fields: Vec<String> = [
            ("m", "1|f5||name"),
            ("pr", "0"),
            ("ra", "1893456000000000"),
            ("s", "w"),
            ("c", "1893456000000000"),
            ("wf", &encode_step(&step)),
            ("i1", big),
            ("wn", "1"),
        ]
        .iter()
        .flat_map(|(k, v)| [k.to_string(), v.to_string()])
        .collect();
        let stored = Stored {
            fields,
            payload: Some("null".into()),
            long_result: None,
            errors: Vec::new(),
        };
        let r = stored.record(&id, "q", PayloadRead::Strict).unwrap();
        assert_eq!(r.status, JobStatus::Waiting);
        assert_eq!(r.step.as_deref(), Some(&step));
        assert_eq!(r.inputs.keys().copied().collect::<Vec<_>>(), [1]);
        assert_eq!(r.inputs[&1].get(), big, "the raw text");
    }

    #[test]
    fn a_stored_job_reads_back() {
        let id = id_text(JobId::new());
        let fields: Vec<String> = [
            ("m", "2|f5||a|name"),
            ("pr", "-3"),
            ("ra", "1893456000000000"),
            ("s", "d"),
            ("a", "2"),
            ("c", "1893456000000000"),
            ("f", "1893456000100000"),
            ("ne", "3"),
            ("tg", r#"["order:42","vip"]"#),
            ("v", "2"),
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
                r#"{"a":3,"t":1893456000000003,"kind":"fatal","message":"no: card declined","chain":["card declined"]}"#.into(),
            ],
        };
        let r = stored.record(&id, "q", PayloadRead::Strict).unwrap();
        assert_eq!((r.priority, r.attempt, r.max_attempts), (-3, 2, 2));
        assert_eq!(r.status, jobs_core::JobStatus::Dead);
        assert_eq!(r.payload.get(), r#"{"to":"a@b"}"#);
        assert_eq!((&*r.name, r.timeout), ("a|name", None));
        assert_eq!(r.backoff, Backoff::fixed(Duration::from_millis(5)));
        assert_eq!(r.errors[0].message, "first: with a colon");
        assert_eq!(r.errors[1].attempt, 2);
        assert_eq!(
            r.errors[1].kind,
            ErrorKind::Retryable,
            "the old form is retryable"
        );
        assert_eq!(
            r.errors[2],
            AttemptError {
                attempt: 3,
                at: DateTime::from_timestamp_micros(1893456000000003).unwrap(),
                kind: ErrorKind::Fatal,
                message: "no: card declined".into(),
                chain: vec!["card declined".into()],
            }
        );
        assert_eq!(r.tags, ["order:42", "vip"]);
        assert_eq!(r.version, 2);
        let unversioned = Stored {
            fields: stored.fields[..stored.fields.len() - 2].to_vec(),
            payload: stored.payload.clone(),
            long_result: None,
            errors: Vec::new(),
        };
        let r1 = unversioned.record(&id, "q", PayloadRead::Strict).unwrap();
        assert_eq!(r1.version, 1, "a job stored without `v` is of version 1");
        assert_eq!(r.run_at.to_rfc3339(), "2030-01-01T00:00:00+00:00");
        assert!(r.lease.is_none() && r.result.is_none() && r.started_at.is_none());
        let not_json = Stored {
            payload: Some("not json {".into()),
            ..stored
        };
        let err = not_json.record(&id, "q", PayloadRead::Strict).unwrap_err();
        assert!(err.to_string().contains("is corrupt"), "{err}");
        let shown = not_json.record(&id, "q", PayloadRead::Lenient).unwrap();
        assert_eq!(shown.payload.get(), r#""not json {""#);
        let missing = Stored {
            payload: None,
            ..not_json
        };
        for read in [PayloadRead::Strict, PayloadRead::Lenient] {
            assert!(missing.record(&id, "q", read).is_err());
        }
    }

    #[test]
    fn a_short_payload_reads_from_the_hash() {
        let id = id_text(JobId::new());
        let stored = |payload: &[(&str, &str)]| Stored {
            fields: [
                ("m", "3|e1000m60000j||email"),
                ("pr", "0"),
                ("ra", "1893456000000000"),
                ("s", "p"),
                ("c", "1893456000000000"),
            ]
            .iter()
            .chain(payload)
            .flat_map(|(k, v)| [k.to_string(), v.to_string()])
            .collect(),
            payload: None,
            long_result: None,
            errors: Vec::new(),
        };
        let r = stored(&[("p", r#"{"user_id":7}"#)])
            .record(&id, "q", PayloadRead::Strict)
            .unwrap();
        assert_eq!(r.payload.get(), r#"{"user_id":7}"#);
        let halves = stored(&[("p2", r#"e.com"}"#), ("p", r#"{"email":"a@exampl"#)]);
        let r = halves.record(&id, "q", PayloadRead::Strict).unwrap();
        assert_eq!(
            r.payload.get(),
            r#"{"email":"a@example.com"}"#,
            "p, then p2"
        );
        let not_json = stored(&[("p", "not json {")]);
        let err = not_json.record(&id, "q", PayloadRead::Strict).unwrap_err();
        assert!(err.to_string().contains("is corrupt"), "{err}");
        let shown = not_json.record(&id, "q", PayloadRead::Lenient).unwrap();
        assert_eq!(shown.payload.get(), r#""not json {""#);
    }
}
