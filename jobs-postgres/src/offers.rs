//! Offers and deliveries: an idle worker's fetch of one queue that finds nothing offers its idle
//! places (`sql/offer.sql`), and an enqueue of one ready job leases the job straight to that
//! worker and notifies it on this backend instance's delivery channel (migration 0020), so the
//! worker starts the job when the enqueue commits, without a fetch of its own.
//!
//! A notification is `{"w": worker, "q": queue, "i": id, "t": token, "x": lease expiry, "o":
//! offer, "n": the delivery's number in it, "r": the job's record as enqueued}`, or `{"w"}`
//! alone: the mark with which `sql/withdraw.sql` ends a stopping worker's deliveries. A job
//! whose worker has no subscription here any more is handed back at once; one that does not
//! decode is failed as dead, as a fetch fails it; one lost on the way (the listener's connection
//! dropped) is rescued when its lease lapses, as a dead worker's jobs are.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use chrono::SubsecRound;
use jobs_core::{
    DeliveryLedger, EndDeliveriesParams, Error, FailParams, Failure, FetchParams, JobId, JobRecord,
    JobStatus, Lease, LeaseRef, LeaseToken, LeasedJob, NewJob, Relay, Release, ReleaseParams,
    Timestamp,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::backend::Inner;
use crate::error::db;
use crate::fetch::known;
use crate::record::millis;
use crate::{writes, PgBackend};

/// The longest record an enqueue offers for delivery: its notification, with the lease and
/// the names around it, must stay under PostgreSQL's 8,000 bytes (the function checks).
const RECORD_MAX: usize = 7_000;

/// The record of `job`, enqueued at `now`, as JSON for an offer to take (see migration 0020);
/// `None` when no offer may: the job waits for its time, has key limits or is a workflow step,
/// or its record is too long for a notification.
pub(crate) fn deliverable(job: &NewJob, now: Timestamp) -> Result<Option<String>, Error> {
    if job.initial_status(now) != JobStatus::Pending
        || job.key_limits.is_some()
        || job.step.is_some()
        || job.unique_key.is_some()
        || job.payload.get().len() > RECORD_MAX
    {
        return Ok(None);
    }
    // Its times as the store keeps them, in whole microseconds.
    let mut record = JobRecord::new(job.clone(), now.trunc_subsecs(6));
    record.run_at = record.run_at.trunc_subsecs(6);
    let record = serde_json::to_string(&record)?;
    Ok((record.len() <= RECORD_MAX).then_some(record))
}

/// The queues in which a producer's last enqueue saw no offer standing: an enqueue tries to
/// deliver its job (the dearer `deliver_one`) in the others only, so that a queue whose workers
/// are all busy pays nothing for offers. Once a worker of such a queue falls idle, the next job
/// there is stored plainly (and wakes it), and its answer makes the one after it try.
#[derive(Debug, Default)]
pub(crate) struct OfferedQueues(Mutex<HashSet<String>>);

impl OfferedQueues {
    /// Whether an enqueue into `queue` tries to deliver: its last one there did not see that no
    /// offer stood.
    pub(crate) fn worth_trying(&self, queue: &str) -> bool {
        !self.quiet().contains(queue)
    }

    /// What the last enqueue into `queue` saw: whether an offer stood there.
    pub(crate) fn saw(&self, queue: &str, offered: bool) {
        let mut quiet = self.quiet();
        if offered == quiet.contains(queue) {
            if offered {
                quiet.remove(queue);
            } else {
                quiet.insert(queue.to_string());
            }
        }
    }

    fn quiet(&self) -> MutexGuard<'_, HashSet<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One notification on the delivery channel.
#[derive(Deserialize)]
struct Message<'a> {
    /// The worker.
    w: String,
    /// The job's id; none in the mark that ends the worker's deliveries.
    i: Option<Uuid>,
    /// The lease's token.
    t: Option<Uuid>,
    /// The lease's expiry.
    x: Option<Timestamp>,
    /// The offer.
    #[serde(default)]
    o: String,
    /// The delivery's number in the offer, from 1.
    #[serde(default)]
    n: u32,
    /// The job's record as enqueued.
    #[serde(borrow)]
    r: Option<&'a RawValue>,
}

/// The relay of a backend instance's delivery channel, and what its workers offered.
pub(crate) struct Deliveries {
    backend: Weak<Inner>,
    /// `jobs_deliver_<32 hex digits>`, one per backend instance.
    channel: String,
    /// Whether the listener hears the channel now: while it reconnects, workers offer nothing,
    /// since a job delivered then would be lost until its lease lapsed.
    live: Arc<AtomicBool>,
    ledger: DeliveryLedger,
    /// The workers that offered since they last ended their deliveries, each with whether
    /// its offer stands as far as this instance knows (a rescue of a gone worker withdraws it
    /// too).
    offering: Mutex<HashMap<String, bool>>,
}

impl Deliveries {
    /// The relay of the backend that `backend` will point to.
    pub(crate) fn new(backend: Weak<Inner>) -> Self {
        Deliveries {
            backend,
            channel: format!("jobs_deliver_{}", Uuid::new_v4().simple()),
            live: Arc::default(),
            ledger: DeliveryLedger::default(),
            offering: Mutex::default(),
        }
    }

    /// The channel this instance's deliveries come on.
    pub(crate) fn channel(&self) -> &str {
        &self.channel
    }

    /// The flag the listener keeps set while it hears the channel.
    pub(crate) fn live(&self) -> Arc<AtomicBool> {
        self.live.clone()
    }

    fn offering(&self) -> MutexGuard<'_, HashMap<String, bool>> {
        self.offering.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands a delivered job to its worker's subscription; back to the store when the worker
    /// has none here, failed when its record does not decode.
    fn hand(&self, message: Message<'_>, id: JobId, token: LeaseToken) {
        self.ledger.hear(&message.w, &message.o, message.n);
        let Some(inner) = self.backend.upgrade() else {
            return;
        };
        let backend = PgBackend::of(inner);
        match delivered_job(&message, id, token) {
            Ok(job) => {
                if let Some(job) = backend.wake_hub().deliver(&message.w, job) {
                    tokio::spawn(async move { backend.hand_back(job.lease()).await });
                }
            }
            Err(e) => {
                let items = vec![Failure::undecodable(LeaseRef { id, token }, &e)];
                tokio::spawn(async move {
                    let p = FailParams {
                        items,
                        now: chrono::Utc::now(),
                    };
                    if let Err(e) = writes::fail(backend.sql(), backend.pool(), p).await {
                        tracing::warn!(job = %id, error = %e, "could not fail a corrupt delivered job; its lease will lapse");
                    }
                });
            }
        }
    }
}

/// The job of a delivery, leased as the enqueue stored it: running its first attempt, started
/// when it was created.
fn delivered_job(message: &Message<'_>, id: JobId, token: LeaseToken) -> Result<LeasedJob, Error> {
    let (Some(record), Some(expires_at)) = (message.r, message.x) else {
        return Err(Error::backend(format!(
            "a delivery of job {id} has no record or no expiry"
        )));
    };
    let mut record: JobRecord = serde_json::from_str(record.get())
        .map_err(|e| Error::backend(format!("stored job {id} is corrupt: {e}")))?;
    if record.id != id {
        return Err(Error::backend(format!(
            "a delivery of job {id} holds the record of job {}",
            record.id
        )));
    }
    record.status = JobStatus::Running;
    record.attempt = 1;
    record.started_at = Some(record.created_at);
    record.lease = Some(Lease {
        worker: message.w.clone(),
        token,
        expires_at,
    });
    Ok(LeasedJob {
        record,
        token,
        reserved: false,
    })
}

impl Relay for Deliveries {
    fn deliver(&self, text: &str) {
        let message: Message<'_> = match serde_json::from_str(text) {
            Ok(message) => message,
            Err(e) => {
                tracing::warn!(error = %e, "a delivery does not parse; its job is rescued when its lease lapses");
                return;
            }
        };
        match (message.i, message.t) {
            (Some(id), Some(token)) => self.hand(message, JobId(id), LeaseToken(token)),
            (None, _) => self.ledger.end(&message.w, ""),
            (Some(id), None) => {
                tracing::warn!(job = %id, "a delivery has no lease token; the job is rescued when its lease lapses")
            }
        }
    }

    /// A delivery sent while the listener was away is lost (its job is rescued when its lease
    /// lapses, as a dead worker's are), and the count of the offer it was made under with it:
    /// this instance's offers are withdrawn, and its workers offer anew at their next fetch that
    /// finds nothing (the wake-up hub, on the same connection, wakes them all).
    fn missed(&self) {
        self.offering()
            .values_mut()
            .for_each(|stands| *stands = false);
        let Some(inner) = self.backend.upgrade() else {
            return;
        };
        let backend = PgBackend::of(inner);
        tokio::spawn(async move {
            let channel = backend.deliveries().channel();
            let forgotten = sqlx::query(&backend.sql().forget_offers)
                .bind(None::<Vec<String>>)
                .bind(channel)
                .execute(backend.pool())
                .await;
            if let Err(e) = forgotten {
                tracing::warn!(error = %e, "could not withdraw the offers of a listener that was away; they lapse after a lease's length");
            }
        });
    }
}

impl PgBackend {
    /// After a fetch of `p.queues`: a fetch of one queue that leased nothing offers the
    /// worker's idle places there (or recounts its standing offer); any other withdraws the
    /// worker's offers, if it has any. A failure is logged: an offer not made costs only the
    /// delivery, and one not withdrawn lapses after a lease's length.
    pub(crate) async fn offer_or_withdraw(&self, p: &FetchParams, leased: bool) {
        let deliveries = self.deliveries();
        let offers = match p.queues.as_slice() {
            [queue] if !leased && p.deliver > 0 && deliveries.live.load(Ordering::Acquire) => {
                Some(queue)
            }
            _ => None,
        };
        let done = match offers {
            Some(queue) => {
                deliveries.offering().insert(p.worker.clone(), true);
                self.offer(p, queue).await
            }
            None => {
                match deliveries.offering().get_mut(&p.worker) {
                    Some(stands) if *stands => *stands = false,
                    _ => return,
                }
                self.withdraw(&p.worker, None).await
            }
        };
        if let Err(e) = done {
            tracing::warn!(worker = %p.worker, error = %e, "could not offer or withdraw idle places; they lapse after a lease's length");
        }
    }

    /// Offers `p.worker`'s `p.deliver` idle places in `queue`.
    async fn offer(&self, p: &FetchParams, queue: &str) -> Result<(), Error> {
        let deliveries = self.deliveries();
        let (offer, heard) = deliveries.ledger.heard(&p.worker);
        let (names, versions) = known(p.known.as_deref());
        sqlx::query(&self.sql().offer)
            .bind(queue)
            .bind(&p.worker)
            .bind(i32::try_from(p.deliver).unwrap_or(i32::MAX))
            .bind(names)
            .bind(versions)
            .bind(millis(p.lease_for))
            .bind(p.now)
            .bind(deliveries.channel())
            .bind(Uuid::parse_str(&offer).ok())
            .bind(i32::try_from(heard).unwrap_or(i32::MAX))
            .execute(self.pool())
            .await
            .map_err(db)?;
        Ok(())
    }

    /// Withdraws `worker`'s offers, then, given the delivery channel, notifies the mark that
    /// ends its deliveries there.
    async fn withdraw(&self, worker: &str, channel: Option<&str>) -> Result<(), Error> {
        sqlx::query(&self.sql().withdraw)
            .bind(worker)
            .bind(channel)
            .execute(self.pool())
            .await
            .map_err(db)?;
        Ok(())
    }

    /// Withdraws `p.worker`'s offers and waits until the mark that follows its last delivery
    /// is heard (a delivery made before a fetch withdrew its offer may still be on its way).
    /// Nothing to do for a worker that made no offer through this instance.
    pub(crate) async fn end_deliveries_to(&self, p: EndDeliveriesParams) -> Result<(), Error> {
        let deliveries = self.deliveries();
        if deliveries.offering().remove(&p.worker).is_none() {
            deliveries.ledger.forget(&p.worker);
            return Ok(());
        }
        let ended = deliveries.ledger.expect_end(&p.worker, "");
        let done = match self.withdraw(&p.worker, Some(deliveries.channel())).await {
            Ok(()) => deliveries.ledger.await_ends(&p.worker, vec![ended]).await,
            Err(e) => Err(e),
        };
        deliveries.ledger.forget(&p.worker);
        done
    }

    /// Hands a delivered job whose worker stopped back to its queue, its attempt unspent.
    async fn hand_back(&self, lease: LeaseRef) {
        let params = ReleaseParams {
            items: vec![Release {
                lease,
                run_at: None,
            }],
            now: chrono::Utc::now(),
        };
        if let Err(e) = writes::release(self.sql(), self.pool(), params).await {
            tracing::warn!(job = %lease.id, error = %e, "could not hand back a job delivered to a stopped worker; it is rescued when its lease lapses");
        }
    }
}
