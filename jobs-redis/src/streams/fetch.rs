//! Leasing entries: one transaction per queue, the queues in the order the worker names them.
//! The transaction is fetch.lua, an `XREADGROUP` of the queue's stream `x`, then fetched.lua:
//! most often fetch.lua finds that `x` holds the next entries and leaves the read to the
//! `XREADGROUP`, whose entries reach the client as Redis reads them (a script's reply is
//! converted into Lua and back: about 1.7 µs per entry more), and fetched.lua writes the
//! call's lease over what it read. Else (entries of another priority or returned ones first, a
//! paused queue, a queue whose limits let fewer jobs start than asked or that has a rate, jobs
//! waiting apart in `xapart`) fetch.lua reads and leases them itself and hides `x` from the
//! `XREADGROUP`. Where jobs with key limits may wait, calls follow one another until one takes
//! nothing, as each takes a run of one stream.
//!
//! A read takes every entry, whatever its job's name and version: those the worker does not
//! run (another name, a newer version, during a rolling deploy) are set aside
//! (`lua/streams/aside.lua`), untouched, to wait apart for a worker that runs them, which
//! fetch.lua looks for there by the names and versions it is given.

use std::sync::Arc;

use jobs_core::{
    later, Error, Failure, FetchParams, KnownJob, Lease, LeaseRef, LeasedJob, Timestamp,
};
use redis::{Cmd, RedisError, Value};

use crate::flow::{ended_leases, fetch_flow};
use crate::leases::{distinct, leased_record, push_known, push_lease, until_decoded};
use crate::library;
use crate::marker::Layout;
use crate::names::Names;
use crate::queues::queue_tag;
use crate::record::{micros, parse_id, stored_time, Stored};
use crate::scripts::SCRIPTS;
use crate::streams::packed::{expanded, id_of};
use crate::streams::reply::{bounds, entry, items, unreadable};
use crate::streams::token::{token, CallId};
use crate::RedisBackend;

impl RedisBackend {
    /// Leases up to `p.limit` jobs of `p.queues`, from each queue in turn, in the order the
    /// worker names them.
    pub(crate) async fn fetch_entries(&self, p: FetchParams) -> Result<Vec<LeasedJob>, Error> {
        let queues = distinct(&p.queues);
        if p.known.as_ref().is_some_and(Vec::is_empty) {
            return Ok(Vec::new());
        }
        self.inner().queues.remember(queues.iter().copied());
        let expires = later(p.now, p.lease_for);
        let mut all = Vec::new();
        for queue in &queues {
            // A call takes a run of one stream: where jobs with key limits may wait, one of
            // them or of the queue's entries, so calls follow until one takes nothing.
            let keyed = p.flow.iter().any(|f| f.queue == *queue && f.keyed);
            while all.len() < p.limit {
                let leased = self
                    .lease_entries(queue, p.limit - all.len(), &p, expires)
                    .await?;
                let more = keyed && !leased.is_empty();
                // The first queue's jobs are the answer as they are, not copied into it.
                if all.is_empty() {
                    all = leased;
                } else {
                    all.extend(leased);
                }
                if !more {
                    break;
                }
            }
        }
        // A worker that took jobs offers no idle place any more; one that found none of its
        // only queue waits for the next in a blocked read (see `pickup`).
        match (&queues[..], all.is_empty()) {
            (_, false) => self.end_wait_soon(&p.worker),
            ([queue], true) => {
                if let Err(e) = self.wait_for_jobs(queue, &p).await {
                    tracing::warn!(queue = %queue, error = %e, "could not start a blocked read; the worker waits for wake-ups");
                }
            }
            _ => {}
        }
        Ok(all)
    }

    /// Leases up to `limit` entries of `queue`. Jobs that do not decode are failed as dead and
    /// not returned; when a batch held nothing else, the next one is fetched, so that an empty
    /// answer still means an empty queue.
    async fn lease_entries(
        &self,
        queue: &str,
        limit: usize,
        p: &FetchParams,
        expires: Timestamp,
    ) -> Result<Vec<LeasedJob>, Error> {
        until_decoded(|| async {
            let (call, reply) = self.lease_call(queue, limit, p, expires).await?;
            let (reply, counted) = counted_entries(reply)?;
            let lease = LeaseOf {
                call,
                queue,
                worker: &p.worker,
                started: p.now,
                expires,
                counted,
            };
            let taken = leased_jobs(reply, &lease, p.known.as_deref())?;
            // Set aside or failed, jobs of the batch that did not reach the worker: fetch again.
            let missed = taken.corrupt.len() + taken.aside.len();
            self.let_go_of(taken.corrupt, taken.aside, p.now).await;
            Ok((taken.leased, missed))
        })
        .await
    }

    /// One fetch call, under a call id drawn again while another call holds it: the entries it
    /// leased, as an array of entries.
    async fn lease_call(
        &self,
        queue: &str,
        limit: usize,
        p: &FetchParams,
        expires: Timestamp,
    ) -> Result<(CallId, Value), Error> {
        self.check_layout().await?;
        let stream = format!("{}x", self.inner().keys.queue(queue));
        loop {
            let call = CallId::draw();
            let script = |function| {
                let mut inv = self.invocation(function, queue, p.now);
                inv.arg(micros(expires))
                    .arg(&p.worker)
                    .arg(limit)
                    .arg(call.to_string());
                inv
            };
            let (mut begin, end) = (script(&SCRIPTS.xfetch), script(&SCRIPTS.xfetched));
            begin
                .arg(fetch_flow(p, queue, false))
                .arg(2 * p.known.as_ref().map_or(0, Vec::len));
            push_known(&mut begin, p);
            for lease in ended_leases(p, queue) {
                push_lease(&mut begin, Layout::Streams, lease);
            }
            let mut pipe = redis::pipe();
            pipe.atomic()
                .ignore_errors()
                .add_command(Cmd::clone(&begin))
                .cmd("XREADGROUP")
                .arg("GROUP")
                .arg("g")
                .arg(&p.worker)
                .arg("COUNT")
                .arg(limit)
                .arg("STREAMS")
                .arg(&stream)
                .arg(">")
                .add_command(Cmd::clone(&end));
            let replies: Vec<Value> = pipe
                .query_async(&mut self.inner().conn.clone())
                .await
                .map_err(Error::backend)?;
            let [began, read, ended]: [Value; 3] = replies
                .try_into()
                .map_err(|r| Error::backend(format!("a fetch's transaction answered {r:?}")))?;
            match began {
                Value::ServerError(e) if e.code() == "TAKEN" => continue,
                // The library was missing: nothing ran but the read, whose entries are this
                // worker's now, without a lease. The lease is taken for them once the library
                // is loaded again.
                Value::ServerError(e) => {
                    let e = RedisError::from(e);
                    if !library::is_missing(&e) {
                        return Err(library::explain(e));
                    }
                    // A read that failed (no stream yet) took nothing.
                    let entries = match read {
                        Value::ServerError(_) => Value::Array(Vec::new()),
                        read => read_entries(read)?,
                    };
                    let Some((first, _, _)) = bounds(&entries)? else {
                        library::load(&mut self.inner().conn.clone())
                            .await
                            .map_err(library::explain)?;
                        continue;
                    };
                    // Should this fail too, the entries stay this worker's until it is gone,
                    // when the rescue of its pending entries finds them.
                    let mut adopt = end;
                    adopt.arg(first);
                    self.run::<usize>(&adopt).await?;
                    return Ok((call, entries));
                }
                Value::SimpleString(_) | Value::BulkString(_) => {
                    // fetched.lua failing alone is a fault of the script: the entries read
                    // stay this worker's, as above.
                    if let Value::ServerError(e) = ended {
                        return Err(library::explain(e.into()));
                    }
                    return Ok((call, read_entries(read)?));
                }
                entries => return Ok((call, entries)),
            }
        }
    }
}

/// The entries of an `XREADGROUP` of one stream, as an array (empty when it read none):
/// `[[stream, entries]]` in RESP2, `{stream: entries}` in RESP3.
pub(crate) fn read_entries(read: Value) -> Result<Value, Error> {
    let unexpected = |v: Value| Error::backend(format!("a fetch's read answered {v:?}"));
    let stream = match read {
        Value::Nil => return Ok(Value::Array(Vec::new())),
        Value::Map(mut streams) if streams.len() == 1 => return Ok(streams.remove(0).1),
        Value::Array(mut streams) if streams.len() == 1 => streams.remove(0),
        Value::ServerError(e) => return Err(library::explain(e.into())),
        other => return Err(unexpected(other)),
    };
    match stream {
        Value::Array(mut pair) if pair.len() == 2 => Ok(pair.remove(1)),
        other => Err(unexpected(other)),
    }
}

/// The lease of a read's entries: its fetch call, its queue, the worker, its times, and how
/// many of the entries count against the queue's concurrency (the others are reserved beyond
/// it).
pub(crate) struct LeaseOf<'a> {
    pub call: CallId,
    pub queue: &'a str,
    pub worker: &'a str,
    pub started: Timestamp,
    pub expires: Timestamp,
    pub counted: usize,
}

/// A fetch's entries, and how many of them count against the queue's concurrency: fetch.lua
/// answers `['counted', n, entries]` when it reserved some beyond it, else the entries, which
/// all count.
fn counted_entries(reply: Value) -> Result<(Value, usize), Error> {
    match reply {
        Value::Array(parts) if matches!(parts.first(), Some(Value::BulkString(tag)) if tag == b"counted") =>
        {
            let [_, counted, entries]: [Value; 3] = parts
                .try_into()
                .map_err(|r| Error::backend(format!("a fetch answered {r:?}")))?;
            let counted = redis::from_redis_value(counted).map_err(Error::backend)?;
            Ok((entries, counted))
        }
        entries => Ok((entries, usize::MAX)),
    }
}

/// The jobs a read leased, sorted by what becomes of them.
pub(crate) struct Taken {
    /// Those the worker runs.
    pub leased: Vec<LeasedJob>,
    /// A failure for each that does not decode.
    pub corrupt: Vec<Failure>,
    /// The leases of those of a name, or at a version, the worker does not run.
    pub aside: Vec<LeaseRef>,
}

/// The jobs of a read's reply, leased under `lease`, of which those `known` admits (see
/// [`KnownJob::admits`]) reach the worker.
pub(crate) fn leased_jobs(
    reply: Value,
    lease: &LeaseOf,
    known: Option<&[KnownJob]>,
) -> Result<Taken, Error> {
    let started = stored_time(lease.started);
    let expires = stored_time(lease.expires);
    let worker: Arc<str> = lease.worker.into();
    let (call, tag, counted) = (lease.call, queue_tag(lease.queue), lease.counted);
    let mut names = Names::new(lease.queue);
    let mut taken = Taken {
        leased: Vec::new(),
        corrupt: Vec::new(),
        aside: Vec::new(),
    };
    for (n, value) in items(reply)?.iter().enumerate() {
        let entry = match entry(value) {
            Ok(entry) => entry,
            // A value that is not text fails its job alone, where the ids can be read.
            Err(e) => {
                let Some((at, id)) = unreadable(value) else {
                    return Err(e);
                };
                let lease = LeaseRef {
                    id: parse_id(id)?,
                    token: token(call, tag, at)?,
                };
                taken.corrupt.push(Failure::undecodable(lease, &e));
                continue;
            }
        };
        let token = token(call, tag, entry.id)?;
        let id = id_of(&entry.fields)
            .ok_or_else(|| Error::backend(format!("stream entry {} holds no job", entry.id)))?;
        let lease = Lease {
            worker: worker.clone(),
            token,
            expires_at: expires,
        };
        // A malformed `j` fails its job as a payload that does not decode does.
        let decoded = expanded(&entry.fields).and_then(|mut fields| {
            fields.extend(["s", "p"]);
            let stored = Stored {
                fields,
                payload: None,
                long_result: None,
                errors: Vec::new(),
            };
            leased_record(&stored, id, &mut names, lease, Some(started))
        });
        match decoded {
            Ok(record) if KnownJob::admits(known, &record.name, record.version) => {
                taken.leased.push(LeasedJob {
                    record,
                    token,
                    reserved: n >= counted,
                });
            }
            Ok(record) => taken.aside.push(LeaseRef {
                id: record.id,
                token,
            }),
            Err(e) => taken.corrupt.push(Failure::undecodable(
                LeaseRef {
                    id: parse_id(id)?,
                    token,
                },
                &e,
            )),
        }
    }
    Ok(taken)
}

impl RedisBackend {
    /// Lets go of the jobs a read took that do not reach the worker: fails `corrupt` ones as
    /// dead, and sets `aside` ones apart for a worker that runs them (`lua/streams/aside.lua`).
    /// Should that fail, their leases lapse and they run again after the rescue.
    pub(crate) async fn let_go_of(
        &self,
        corrupt: Vec<Failure>,
        aside: Vec<LeaseRef>,
        now: Timestamp,
    ) {
        if !corrupt.is_empty() {
            self.fail_corrupt(corrupt, now).await;
        }
        if aside.is_empty() {
            return;
        }
        let set = self
            .under_leases(&SCRIPTS.xaside, now, &aside, |l| *l, |_| {}, |_, _| {})
            .await;
        if let Err(e) = set {
            let ids: Vec<_> = aside.iter().map(|l| l.id).collect();
            tracing::warn!(?ids, error = %e, "could not set aside jobs this worker does not run; their leases will lapse");
        }
    }
}
