//! Leasing entries: one script call per queue (`XREADGROUP` and the call's lease), the queues
//! in the order the worker names them.

use std::sync::Arc;

use jobs_core::{later, Error, Failure, FetchParams, Lease, LeaseRef, LeasedJob, Timestamp};
use redis::Value;

use crate::leases::{distinct, leased_record, until_decoded};
use crate::queues::queue_tag;
use crate::record::{micros, parse_id, stored_time, Stored};
use crate::scripts::SCRIPTS;
use crate::streams::packed::{expanded, id_of};
use crate::streams::reply::{entry, items, unreadable};
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
        for queue in queues {
            if all.len() >= p.limit {
                break;
            }
            let leased = self
                .lease_entries(queue, p.limit - all.len(), &p, expires)
                .await?;
            all.extend(leased);
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
            let (leased, corrupt) = leased_jobs(reply, call, queue, p, expires)?;
            let failed = corrupt.len();
            if failed > 0 {
                self.fail_corrupt(corrupt, p.now).await;
            }
            Ok((leased, failed))
        })
        .await
    }

    /// One fetch call, under a call id drawn again while another call holds it.
    async fn lease_call(
        &self,
        queue: &str,
        limit: usize,
        p: &FetchParams,
        expires: Timestamp,
    ) -> Result<(CallId, Value), Error> {
        self.check_layout().await?;
        loop {
            let call = CallId::draw();
            let mut inv = self.invocation(&SCRIPTS.xfetch, queue, p.now);
            inv.arg(micros(expires))
                .arg(&p.worker)
                .arg(limit)
                .arg(call.to_string());
            match self.send_raw(&inv).await {
                Err(e) if e.code() == Some("TAKEN") => continue,
                Err(e) => return Err(crate::library::explain(e)),
                Ok(reply) => return Ok((call, reply)),
            }
        }
    }
}

/// The jobs of a fetch's reply, and a failure for each that does not decode.
fn leased_jobs(
    reply: Value,
    call: CallId,
    queue: &str,
    p: &FetchParams,
    expires: Timestamp,
) -> Result<(Vec<LeasedJob>, Vec<Failure>), Error> {
    let started = stored_time(p.now);
    let expires = stored_time(expires);
    let worker: Arc<str> = p.worker.as_str().into();
    let tag = queue_tag(queue);
    let mut leased = Vec::new();
    let mut corrupt = Vec::new();
    for value in &items(reply)? {
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
                corrupt.push(Failure::undecodable(lease, &e));
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
            leased_record(&stored, id, queue, lease, Some(started))
        });
        match decoded {
            Ok(record) => leased.push(LeasedJob {
                record,
                token,
                reserved: false,
            }),
            Err(e) => corrupt.push(Failure::undecodable(
                LeaseRef {
                    id: parse_id(id)?,
                    token,
                },
                &e,
            )),
        }
    }
    Ok((leased, corrupt))
}
