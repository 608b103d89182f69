//! The hot path: fetch with a lease, then writes under that lease (complete, fail, release,
//! renew, progress), each one script call per queue for the whole batch.
//!
//! A lease token is 128 bits: 64 random bits drawn per fetch, the 32-bit tag of the job's queue
//! (see [`queue_tag`]), and the job's 32-bit index in its fetch batch. Each fetch draws fresh
//! random bits, so a token is never handed out twice, and a write that carries only a job id and
//! a token knows which queue's slot to go to.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use futures_util::future::try_join_all;
use jobs_core::{
    later, CompleteParams, Error, FailParams, Failure, FetchParams, JobRecord, JobStatus, Lease,
    LeaseRef, LeaseToken, LeasedJob, ProgressParams, ReleaseParams, RenewParams, Timestamp,
};
use redis::Cmd;
use serde::Deserialize;
use uuid::Uuid;

use crate::flow::fetch_flow;
use crate::ids::IdArg;
use crate::marker::Layout;
use crate::names::Names;
use crate::queues::queue_tag;
use crate::record::{encode_report, micros, parse_id, stored_time, PayloadRead, Stored};
use crate::scripts::{Function, SCRIPTS};
use crate::streams::token;
use crate::RedisBackend;

/// Items per call of a script under leases: a worker's batches hold fewer, and a larger batch
/// (a bulk completion through the backend) neither blocks Redis for long nor passes a script
/// more ids than it can unpack at once.
const CHUNK: usize = 1_000;

/// A job as fetch.lua returns it: its id, its hash before the lease, its payload when the hash
/// does not hold it, its errors (none: null) and whether its lease is reserved (1) or not (0).
/// Its text is borrowed from the reply wherever the JSON has no escape to undo.
#[derive(Deserialize)]
struct FetchedRow<'a>(
    #[serde(borrow)] Text<'a>,
    #[serde(borrow)] Vec<Text<'a>>,
    #[serde(borrow)] Option<Text<'a>>,
    #[serde(borrow)] Option<Vec<Text<'a>>>,
    u8,
);

/// A string of a fetch's reply, borrowed from it unless it held an escape.
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

impl AsRef<str> for Text<'_> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// The first 96 bits of a fetch's tokens on `queue`: fresh random bits and the tag (the last 32
/// bits are each job's index in the batch).
fn token_base(queue: &str) -> u128 {
    let random = Uuid::new_v4().as_u128() >> 64;
    (random << 64) | (u128::from(queue_tag(queue)) << 32)
}

/// The first 24 hex digits of the tokens of `base`, as the fetch script gets them.
fn token_prefix(base: u128) -> String {
    format!("{:024x}", base >> 32)
}

/// The queue tag a token carries.
pub(crate) fn token_tag(token: LeaseToken) -> u32 {
    (token.0.as_u128() >> 32) as u32
}

/// What a completed job keeps of the token of the lease it was completed under (complete.lua
/// compares a repeated completion's with it): the 64 random bits of its fetch and its index in
/// the batch, in 16 base64 digits. The other 32 bits are the queue's tag, the same for every job
/// of the queue; a 32-digit value would move the hash of a retained job to the next allocation
/// size. Computed here rather than in the script, where it took about 10 µs of Redis' time per
/// job.
fn completion_mark(token: LeaseToken) -> [u8; 16] {
    let bytes = token.0.as_bytes();
    let mut kept = [0; 12];
    kept[..8].copy_from_slice(&bytes[..8]);
    kept[8..].copy_from_slice(&bytes[12..]);
    let mut mark = [0; 16];
    let written = STANDARD
        .encode_slice(kept, &mut mark)
        .expect("12 bytes take 16 base64 digits");
    debug_assert_eq!(written, mark.len());
    mark
}

/// Appends the jobs a fetch takes, as known.lua reads them: a name and its newest version
/// each (nothing: every job).
pub(crate) fn push_known(inv: &mut Cmd, p: &FetchParams) {
    for known in p.known.iter().flatten() {
        inv.arg(&known.name).arg(known.version);
    }
}

/// The record of job `id` (of the queue `names` are of) that a script just leased under
/// `lease`, as a read of it would give it back: `stored` holds its hash as it was before the
/// lease. It started at `started`, or when it was created (an enqueue that leased it straight
/// away).
pub(crate) fn leased_record<S: AsRef<str>>(
    stored: &Stored<S>,
    id: &str,
    names: &mut Names,
    lease: Lease,
    started: Option<Timestamp>,
) -> Result<JobRecord, Error> {
    let mut record = stored.record_in(id, names, PayloadRead::Strict)?;
    record.status = JobStatus::Running;
    record.attempt += 1;
    record.started_at = Some(started.unwrap_or(record.created_at));
    record.lease = Some(lease);
    Ok(record)
}

/// The most fetch calls [`until_decoded`] makes: should every call keep taking only jobs that
/// do not reach the worker, its next fetch goes on.
const MOST_CALLS: usize = 64;

/// Runs `once` (one fetch call: the jobs it leased that reach the worker, and how many it took
/// that did not: failed as dead, or set aside) until it leases a job or every job it took
/// reached the worker, so that an empty answer still means an empty queue; at most
/// [`MOST_CALLS`] calls.
pub(crate) async fn until_decoded<F, Fut>(mut once: F) -> Result<Vec<LeasedJob>, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<LeasedJob>, usize), Error>>,
{
    for _ in 1..MOST_CALLS {
        let (leased, missed) = once().await?;
        if !leased.is_empty() || missed == 0 {
            return Ok(leased);
        }
    }
    Ok(once().await?.0)
}

/// The queues a fetch names, each once, in the order it names them.
pub(crate) fn distinct(queues: &[String]) -> Vec<&str> {
    let mut once: Vec<&str> = Vec::with_capacity(queues.len());
    for queue in queues {
        if !once.contains(&queue.as_str()) {
            once.push(queue);
        }
    }
    once
}

impl RedisBackend {
    pub(crate) async fn fetch_jobs(&self, p: FetchParams) -> Result<Vec<LeasedJob>, Error> {
        let queues = distinct(&p.queues);
        // A worker that knows no job takes none (`None` would take every job).
        let knows_none = p.known.as_ref().is_some_and(Vec::is_empty);
        if p.limit == 0 || queues.is_empty() || knows_none {
            return Ok(Vec::new());
        }
        self.inner().queues.remember(queues.iter().copied());
        let expires = later(p.now, p.lease_for);
        if let [queue] = queues[..] {
            let offer = if self.hears_deliveries() {
                p.deliver
            } else {
                0
            };
            return self.lease(queue, p.limit, &p, expires, offer).await;
        }

        // Across queues, which live in different slots: look at each queue's head, pick the
        // best `limit` of them all, then lease that many from each queue. If other workers took
        // them all meanwhile, look again: an empty answer must mean that every queue was empty,
        // since a worker then sleeps until a job enters an empty ready set.
        loop {
            let heads = try_join_all(queues.iter().map(|q| self.peek(q, &p))).await?;
            let mut best: Vec<(i64, String, usize)> = heads
                .into_iter()
                .enumerate()
                .flat_map(|(qi, head)| head.into_iter().map(move |(pr, m)| (pr, m, qi)))
                .collect();
            if best.is_empty() {
                return Ok(Vec::new());
            }
            best.sort_unstable();
            best.truncate(p.limit);
            let mut per_queue = vec![0; queues.len()];
            for (_, _, qi) in &best {
                per_queue[*qi] += 1;
            }
            let leased = try_join_all(
                per_queue
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .map(|(qi, n)| self.lease(queues[qi], *n, &p, expires, 0)),
            )
            .await?;
            let mut all: Vec<LeasedJob> = leased.into_iter().flatten().collect();
            if !all.is_empty() {
                all.sort_by_key(|j| (j.record.priority, j.record.run_at, j.record.id));
                return Ok(all);
            }
        }
    }

    /// Leases up to `limit` jobs of one queue; finding none, offers the worker's `offer` idle
    /// places for deliveries (see idle.lua). Jobs that do not decode are failed as dead and
    /// not returned; when a batch held nothing else, the next one is fetched, so that an empty
    /// answer still means an empty queue.
    async fn lease(
        &self,
        queue: &str,
        limit: usize,
        p: &FetchParams,
        expires: Timestamp,
        offer: usize,
    ) -> Result<Vec<LeasedJob>, Error> {
        until_decoded(|| self.lease_once(queue, limit, p, expires, offer)).await
    }

    /// One fetch script call for [`lease`](Self::lease): the jobs leased that decode, and how
    /// many did not.
    async fn lease_once(
        &self,
        queue: &str,
        limit: usize,
        p: &FetchParams,
        expires: Timestamp,
        offer: usize,
    ) -> Result<(Vec<LeasedJob>, usize), Error> {
        let mut inv = self.invocation(&SCRIPTS.fetch, queue, p.now);
        let base = token_base(queue);
        inv.arg(micros(expires))
            .arg(&p.worker)
            .arg(limit)
            .arg(token_prefix(base))
            .arg(fetch_flow(p, queue, true))
            .arg(offer)
            .arg(self.delivery_channel())
            .arg(p.lease_for.as_micros() as u64);
        let (prefix, heard) = self.deliveries().heard(&p.worker);
        inv.arg(prefix).arg(heard);
        push_known(&mut inv, p);
        let reply: Vec<u8> = self.run(&inv).await?;
        let rows: Vec<FetchedRow> = serde_json::from_slice(&reply)
            .map_err(|e| Error::backend(format!("a fetch's reply does not parse: {e}")))?;
        // What the script wrote, as a read of the job would give it back.
        let started = stored_time(p.now);
        let expires = stored_time(expires);
        let worker: Arc<str> = p.worker.as_str().into();
        let mut names = Names::new(queue);
        let mut leased = Vec::with_capacity(rows.len());
        let mut corrupt = Vec::new();
        for (index, FetchedRow(id, fields, payload, errors, reserved)) in
            rows.into_iter().enumerate()
        {
            let id = id.as_ref();
            let stored = Stored {
                fields,
                payload,
                long_result: None,
                errors: errors.unwrap_or_default(),
            };
            let token = LeaseToken(Uuid::from_u128(base | index as u128));
            let lease = Lease {
                worker: worker.clone(),
                token,
                expires_at: expires,
            };
            match leased_record(&stored, id, &mut names, lease, Some(started)) {
                Ok(record) => {
                    leased.push(LeasedJob {
                        record,
                        token,
                        reserved: reserved == 1,
                    });
                }
                Err(e) => corrupt.push(Failure::undecodable(
                    LeaseRef {
                        id: parse_id(id)?,
                        token,
                    },
                    &e,
                )),
            }
        }
        let failed = corrupt.len();
        if failed > 0 {
            self.fail_corrupt(corrupt, p.now).await;
        }
        Ok((leased, failed))
    }

    /// Fails the jobs of a fetch that do not decode, as dead: no attempt can succeed on them.
    /// Should the write itself fail, their leases lapse and a later fetch fails them again;
    /// the rest of the batch runs either way.
    pub(crate) async fn fail_corrupt(&self, items: Vec<Failure>, now: Timestamp) {
        let ids: Vec<_> = items.iter().map(|f| f.lease.id).collect();
        if let Err(e) = self.fail_jobs(FailParams { items, now }).await {
            tracing::warn!(?ids, error = %e, "could not fail corrupt jobs; their leases will lapse");
        }
    }

    /// The priority and ready-set member of the first `p.limit` ready jobs of `queue` that
    /// `p` takes.
    async fn peek(&self, queue: &str, p: &FetchParams) -> Result<Vec<(i64, String)>, Error> {
        let mut inv = self.invocation(&SCRIPTS.peek, queue, p.now);
        inv.arg(p.limit)
            .arg(&p.worker)
            .arg(fetch_flow(p, queue, true));
        push_known(&mut inv, p);
        let flat: Vec<String> = self.run(&inv).await?;
        flat.chunks_exact(2)
            .map(|pair| {
                let priority = pair[1]
                    .parse::<f64>()
                    .map_err(|_| Error::backend(format!("bad priority `{}`", pair[1])))?;
                Ok((priority as i64, pair[0].clone()))
            })
            .collect()
    }

    pub(crate) async fn complete_jobs(&self, p: CompleteParams) -> Result<Vec<bool>, Error> {
        self.under_leases(
            self.script(&SCRIPTS.complete, &SCRIPTS.xcomplete),
            p.now,
            &p.items,
            |c| c.lease,
            |_| {},
            |inv, c| {
                inv.arg(&completion_mark(c.lease.token)[..])
                    .arg(c.result.get());
            },
        )
        .await
    }

    pub(crate) async fn fail_jobs(&self, p: FailParams) -> Result<Vec<bool>, Error> {
        self.under_leases(
            self.script(&SCRIPTS.fail, &SCRIPTS.xfail),
            p.now,
            &p.items,
            |f| f.lease,
            |_| {},
            |inv, f| {
                let retry_at = f.retry_at.map_or(String::new(), |t| micros(t).to_string());
                inv.arg(encode_report(&f.error)).arg(retry_at);
            },
        )
        .await
    }

    pub(crate) async fn release_jobs(&self, p: ReleaseParams) -> Result<Vec<bool>, Error> {
        self.under_leases(
            self.script(&SCRIPTS.release, &SCRIPTS.xrelease),
            p.now,
            &p.items,
            |r| r.lease,
            |_| {},
            |inv, r| {
                inv.arg(r.run_at.map_or(String::new(), |t| micros(t).to_string()));
            },
        )
        .await
    }

    pub(crate) async fn renew_leases(&self, p: RenewParams) -> Result<Vec<bool>, Error> {
        let expires = micros(p.expires_at);
        self.under_leases(
            self.script(&SCRIPTS.renew, &SCRIPTS.xrenew),
            p.now,
            &p.items,
            |l| *l,
            |inv| {
                inv.arg(expires);
            },
            |_, _| {},
        )
        .await
    }

    pub(crate) async fn record_progress(&self, p: ProgressParams) -> Result<bool, Error> {
        let accepted = self
            .under_leases(
                self.script(&SCRIPTS.progress, &SCRIPTS.xprogress),
                p.now,
                &[p],
                |p| p.lease,
                |_| {},
                |inv, p| {
                    inv.arg(p.progress.min(100));
                },
            )
            .await?;
        Ok(accepted[0])
    }

    /// Runs `script` per queue over the items leased in it, [`CHUNK`] items a call: the shared
    /// arguments, `head`'s, then per item its lease's and what `item` adds. Returns which items
    /// were accepted.
    pub(crate) async fn under_leases<T>(
        &self,
        script: &'static Function,
        now: Timestamp,
        items: &[T],
        lease: impl Fn(&T) -> LeaseRef,
        head: impl Fn(&mut Cmd),
        item: impl Fn(&mut Cmd, &T),
    ) -> Result<Vec<bool>, Error> {
        let tags = self
            .queues_tagged(items.iter().map(|i| token_tag(lease(i).token)))
            .await?;
        let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, it) in items.iter().enumerate() {
            for queue in &tags[&token_tag(lease(it).token)] {
                groups.entry(queue).or_default().push(i);
            }
        }
        let layout = self.layout();
        let calls = groups.into_iter().flat_map(|(queue, members)| {
            let parts: Vec<Vec<usize>> = members.chunks(CHUNK).map(<[usize]>::to_vec).collect();
            parts.into_iter().map(move |part| (queue, part))
        });
        let answers = try_join_all(calls.map(|(queue, members)| {
            let mut inv = self.invocation(script, queue, now);
            head(&mut inv);
            for &i in &members {
                push_lease(&mut inv, layout, lease(&items[i]));
                item(&mut inv, &items[i]);
            }
            async move {
                // A digit per item: 1 accepted, 0 not.
                let answers: Vec<u8> = self.run(&inv).await?;
                Ok::<_, Error>(members.into_iter().zip(answers))
            }
        }))
        .await?;
        let mut accepted = vec![false; items.len()];
        for (i, answer) in answers.into_iter().flatten() {
            accepted[i] |= answer == b'1';
        }
        Ok(accepted)
    }
}

/// One item's lease as the scripts read it: its id and token in the hash layout; its fetch
/// call, its entry and its id in the streams layout.
pub(crate) fn push_lease(inv: &mut Cmd, layout: Layout, lease: LeaseRef) {
    match layout {
        Layout::Hash => inv.arg(IdArg(lease.id.0)).arg(IdArg(lease.token.0)),
        Layout::Streams => {
            let (call, entry) = token::parts(lease.token);
            inv.arg(call).arg(entry).arg(IdArg(lease.id.0))
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::id_text;

    #[test]
    fn completion_marks_keep_the_random_bits_and_the_index() {
        // As the marks stored by the releases that computed them in complete.lua.
        let mark = |hex: &str| {
            let mark = completion_mark(LeaseToken(Uuid::parse_str(hex).unwrap()));
            String::from_utf8(mark.to_vec()).unwrap()
        };
        assert_eq!(mark("01a24378668a7002b12fa39e4fa307cc"), "AaJDeGaKcAJPowfM");
        assert_eq!(mark("ffffffffffffffff00000000fffffffe"), "///////////////+");
        assert_eq!(mark("0000000000000000ffffffff00000000"), "AAAAAAAAAAAAAAAA");
    }

    #[test]
    fn a_fetched_job_is_read_from_the_reply_it_borrows() {
        let id = id_text(jobs_core::JobId::new());
        // As fetch.lua encodes it: the payload, JSON in a JSON string, holds escapes.
        let reply = format!(
            r#"[["{id}",["m","3|e1000||email","pr","0","ra","1893456000000000","s","p","c","1893456000000000","p","{{\"user_id\":7}}","a","1"],null,null,1]]"#
        );
        let rows: Vec<FetchedRow> = serde_json::from_str(&reply).unwrap();
        let Some(FetchedRow(got, fields, payload, errors, reserved)) = rows.into_iter().next()
        else {
            panic!("one row");
        };
        assert!(matches!(got.0, Cow::Borrowed(_)), "no escape: borrowed");
        assert!(fields[..10].iter().all(|f| matches!(f.0, Cow::Borrowed(_))));
        assert!(
            matches!(fields[11].0, Cow::Owned(_)),
            "escapes undone: owned"
        );
        let stored = Stored {
            fields,
            payload,
            long_result: None,
            errors: errors.unwrap_or_default(),
        };
        let started = stored_time(chrono::Utc::now());
        let lease = Lease {
            worker: "w1".into(),
            token: LeaseToken(Uuid::from_u128(7)),
            expires_at: started,
        };
        let mut names = Names::new("email");
        let record = leased_record(
            &stored,
            got.as_ref(),
            &mut names,
            lease.clone(),
            Some(started),
        )
        .unwrap();
        assert_eq!(record.payload.get(), r#"{"user_id":7}"#);
        assert_eq!(&*record.name, "email");
        assert_eq!((record.status, record.attempt), (JobStatus::Running, 2));
        assert_eq!(record.started_at, Some(started));
        assert_eq!(record.lease, Some(lease));
        assert_eq!(reserved, 1);
    }

    #[test]
    fn tokens_carry_their_queue_tag() {
        let base = token_base("email");
        let prefix = token_prefix(base);
        let token = LeaseToken(Uuid::parse_str(&format!("{prefix}0000002a")).unwrap());
        assert_eq!(token, LeaseToken(Uuid::from_u128(base | 0x2a)));
        assert_eq!(token_tag(token), queue_tag("email"));
        assert_ne!(token_base("email"), base, "fresh random bits per fetch");
    }

    /// The arguments a command was given, as text.
    fn args(cmd: &Cmd) -> Vec<String> {
        cmd.args_iter()
            .map(|a| match a {
                redis::Arg::Simple(bytes) => String::from_utf8(bytes.to_vec()).unwrap(),
                other => panic!("not a plain argument: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_lease_is_sent_as_its_stored_texts() {
        let id = jobs_core::JobId::new();
        let entry = token::EntryId {
            ms: 1765000000123,
            seq: 7,
        };
        let call = token::CallId::draw();
        let t = token::token(call, 0xabcd, entry).unwrap();
        let lease = LeaseRef { id, token: t };
        let mut hash = Cmd::new();
        push_lease(&mut hash, Layout::Hash, lease);
        assert_eq!(args(&hash), [id_text(id), crate::ids::token_text(t)]);
        let mut streams = Cmd::new();
        push_lease(&mut streams, Layout::Streams, lease);
        assert_eq!(
            args(&streams),
            [call.to_string(), "1765000000123-7".into(), id_text(id)]
        );
    }
}
