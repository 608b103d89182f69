//! Deliveries: jobs that an enqueue leased straight to an idle worker of this backend instance
//! (see idle.lua and [`FetchParams::deliver`](jobs_core::FetchParams::deliver)), heard on the
//! instance's own channel and handed to the worker's subscription, so that an idle worker
//! starts a new job one hop after its enqueue rather than after a wake-up and a fetch.
//!
//! A message is the JSON object `{"w": worker, "q": queue, "i": id, "t": token, "x": lease
//! expiry, "f": the hash before the lease, "p": payload}`, or `{"w", "q"}` alone: the mark with
//! which withdraw.lua ends a stopping worker's deliveries. A job whose worker has no
//! subscription here any more is handed back at once; one that does not decode is failed as
//! dead, as a fetch fails it; one lost on the way (the connection dropped) is rescued when its
//! lease lapses, as a dead worker's jobs are.

use std::sync::{Arc, Weak};

use chrono::DateTime;
use jobs_core::{DeliveryLedger, Error, Failure, Lease, LeaseRef, LeaseToken, LeasedJob, Relay};
use serde::Deserialize;
use uuid::Uuid;

use crate::leases::leased_record;
use crate::names::Names;
use crate::record::{parse_id, Stored};

/// One message on the delivery channel.
#[derive(Deserialize)]
struct Message {
    /// The worker.
    w: String,
    /// The queue.
    q: String,
    /// The job's id; none in the mark that ends the worker's deliveries.
    i: Option<String>,
    /// The lease's token, 32 hex digits.
    #[serde(default)]
    t: String,
    /// The lease's expiry, in microseconds since the epoch.
    #[serde(default)]
    x: String,
    /// The job's hash before the lease, as `HGETALL` gives it.
    #[serde(default)]
    f: Vec<String>,
    /// The payload.
    p: Option<String>,
}

/// Where a relay hands the jobs it hears: the backend instance whose channel it is (see
/// `delivered.rs`).
pub(crate) trait Recipient: Send + Sync {
    /// Hands `job` to the subscription of `worker`, or back to the store when the worker has
    /// none here.
    fn take(self: Arc<Self>, worker: &str, job: LeasedJob);

    /// Fails, as dead, a delivered job that does not decode.
    fn fail(self: Arc<Self>, failure: Failure);
}

/// The relay of a backend instance's delivery channel.
pub(crate) struct Deliveries {
    recipient: Weak<dyn Recipient>,
    /// What was heard: an offer is a delivery token's first 24 hex digits, and the rest is a
    /// delivery's index in it, from 0, so the ledger counts index + 1 (see fetch.lua).
    ledger: DeliveryLedger,
}

impl Deliveries {
    /// The relay of the instance that `recipient` will point to.
    pub(crate) fn new(recipient: Weak<dyn Recipient>) -> Self {
        Deliveries {
            recipient,
            ledger: DeliveryLedger::default(),
        }
    }

    /// What was heard, and the ends awaited, per worker.
    pub(crate) fn ledger(&self) -> &DeliveryLedger {
        &self.ledger
    }

    /// The token prefix of the last delivery to `worker` heard, and how many of that prefix
    /// were heard (`""` and 0 when none).
    pub(crate) fn heard(&self, worker: &str) -> (String, u32) {
        self.ledger.heard(worker)
    }

    /// Counts a delivery to `worker` under `token` (32 hex digits: the offer's 24, then the
    /// delivery's index) as heard.
    fn hear(&self, worker: &str, token: &str) {
        let (Some(prefix), Some(index)) = (token.get(..24), token.get(24..)) else {
            return;
        };
        if let Ok(index) = u32::from_str_radix(index, 16) {
            self.ledger.hear(worker, prefix, index + 1);
        }
    }

    /// Hands a delivered job to its worker's subscription; back to the store when the worker
    /// has none here, failed when it does not decode.
    fn hand(&self, message: Message, id: &str) {
        self.hear(&message.w, &message.t);
        let Some(recipient) = self.recipient.upgrade() else {
            return;
        };
        let token = match u128::from_str_radix(&message.t, 16) {
            Ok(bits) => LeaseToken(Uuid::from_u128(bits)),
            Err(e) => {
                tracing::warn!(job = id, error = %e, "a delivered job's token does not parse; the job is rescued when its lease lapses");
                return;
            }
        };
        match delivered_job(&message, id, token) {
            Ok(job) => recipient.take(&message.w, job),
            Err(e) => {
                let Ok(id) = parse_id(id) else {
                    tracing::warn!(job = id, error = %e, "a delivered job's id does not parse");
                    return;
                };
                recipient.fail(Failure::undecodable(LeaseRef { id, token }, &e));
            }
        }
    }
}

/// The job `id` of a delivery, leased under `token` as the enqueue script wrote it.
fn delivered_job(message: &Message, id: &str, token: LeaseToken) -> Result<LeasedJob, Error> {
    let expires = message
        .x
        .parse::<i64>()
        .ok()
        .and_then(DateTime::from_timestamp_micros)
        .ok_or_else(|| Error::backend(format!("a delivery of job {id} has no expiry")))?;
    let stored = Stored {
        fields: message.f.iter().map(String::as_str).collect(),
        payload: message.p.as_deref(),
        long_result: None,
        errors: Vec::new(),
    };
    let lease = Lease {
        worker: message.w.as_str().into(),
        token,
        expires_at: expires,
    };
    // The enqueue leased it as it stored it: it started when it was created.
    let record = leased_record(&stored, id, &mut Names::new(&message.q), lease, None)?;
    Ok(LeasedJob {
        record,
        token,
        reserved: false,
    })
}

impl Relay for Deliveries {
    fn deliver(&self, text: &str) {
        let message: Message = match serde_json::from_str(text) {
            Ok(message) => message,
            Err(e) => {
                tracing::warn!(error = %e, "a delivery does not parse; its job is rescued when its lease lapses");
                return;
            }
        };
        match message.i.clone() {
            Some(id) => self.hand(message, &id),
            None => self.ledger.end(&message.w, &message.q),
        }
    }

    /// A delivery missed while away is rescued when its lease lapses (the wake-up hub, on the
    /// same connection, wakes every worker).
    fn missed(&self) {}
}
