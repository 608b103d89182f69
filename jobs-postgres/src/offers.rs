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

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use jobs_core::{
    DeliveryLedger, EndDeliveriesParams, Error, FailParams, Failure, FetchParams, JobId, JobRecord,
    JobStatus, Lease, LeaseRef, LeaseToken, LeasedJob, Relay, Release, ReleaseParams, Timestamp,
    WakeHub,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use sqlx::PgPool;
use uuid::Uuid;

use crate::error::db;
use crate::fetch::known;
use crate::record::millis;
use crate::sql::Sql;
use crate::writes;

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
    /// The store, for the writes a delivery may need (handing a job back, failing it).
    pool: PgPool,
    sql: Arc<Sql>,
    /// Where delivered jobs go: the backend's wake-up hub, which holds the subscriptions.
    hub: Arc<WakeHub>,
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
    /// The relay of a backend instance on `pool` and `sql`'s schema, whose subscriptions `hub`
    /// holds.
    pub(crate) fn new(pool: PgPool, sql: Arc<Sql>, hub: Arc<WakeHub>) -> Self {
        Deliveries {
            pool,
            sql,
            hub,
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
        let (pool, sql) = (self.pool.clone(), self.sql.clone());
        match delivered_job(&message, id, token) {
            Ok(job) => {
                if let Some(job) = self.hub.deliver(&message.w, job) {
                    tokio::spawn(async move { hand_back(&sql, &pool, job.lease()).await });
                }
            }
            Err(e) => {
                let items = vec![Failure::undecodable(LeaseRef { id, token }, &e)];
                tokio::spawn(async move {
                    let p = FailParams {
                        items,
                        now: chrono::Utc::now(),
                    };
                    if let Err(e) = writes::fail(&sql, &pool, p).await {
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
        worker: message.w.as_str().into(),
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
        let (pool, sql, channel) = (self.pool.clone(), self.sql.clone(), self.channel.clone());
        tokio::spawn(async move {
            let forgotten = sqlx::query(&sql.forget_offers)
                .bind(None::<Vec<String>>)
                .bind(channel)
                .execute(&pool)
                .await;
            if let Err(e) = forgotten {
                tracing::warn!(error = %e, "could not withdraw the offers of a listener that was away; they lapse after a lease's length");
            }
        });
    }
}

impl Deliveries {
    /// After a fetch of `p.queues`: a fetch of one queue that leased nothing offers the
    /// worker's idle places there (or recounts its standing offer); any other withdraws the
    /// worker's offers, if it has any. A failure is logged: an offer not made costs only the
    /// delivery, and one not withdrawn lapses after a lease's length.
    pub(crate) async fn offer_or_withdraw(&self, p: &FetchParams, leased: bool) {
        let offers = match p.queues.as_slice() {
            [queue] if !leased && p.deliver > 0 && self.live.load(Ordering::Acquire) => Some(queue),
            _ => None,
        };
        let done = match offers {
            Some(queue) => {
                self.offering().insert(p.worker.clone(), true);
                self.offer(p, queue).await
            }
            None => {
                match self.offering().get_mut(&p.worker) {
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
        let (offer, heard) = self.ledger.heard(&p.worker);
        let (names, versions) = known(p.known.as_deref());
        sqlx::query(&self.sql.offer)
            .bind(queue)
            .bind(&p.worker)
            .bind(i32::try_from(p.deliver).unwrap_or(i32::MAX))
            .bind(names)
            .bind(versions)
            .bind(millis(p.lease_for))
            .bind(p.now)
            .bind(&self.channel)
            .bind(Uuid::parse_str(&offer).ok())
            .bind(i32::try_from(heard).unwrap_or(i32::MAX))
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    /// Withdraws `worker`'s offers, then, given the delivery channel, notifies the mark that
    /// ends its deliveries there.
    async fn withdraw(&self, worker: &str, channel: Option<&str>) -> Result<(), Error> {
        sqlx::query(&self.sql.withdraw)
            .bind(worker)
            .bind(channel)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    /// Withdraws `p.worker`'s offers and waits until the mark that follows its last delivery
    /// is heard (a delivery made before a fetch withdrew its offer may still be on its way).
    /// Nothing to do for a worker that made no offer through this instance.
    pub(crate) async fn end(&self, p: EndDeliveriesParams) -> Result<(), Error> {
        if self.offering().remove(&p.worker).is_none() {
            self.ledger.forget(&p.worker);
            return Ok(());
        }
        let ended = self.ledger.expect_end(&p.worker, "");
        let done = match self.withdraw(&p.worker, Some(&self.channel)).await {
            Ok(()) => self.ledger.await_ends(&p.worker, vec![ended]).await,
            Err(e) => Err(e),
        };
        self.ledger.forget(&p.worker);
        done
    }
}

/// Hands a delivered job whose worker stopped back to its queue, its attempt unspent.
async fn hand_back(sql: &Sql, pool: &PgPool, lease: LeaseRef) {
    let params = ReleaseParams {
        items: vec![Release {
            lease,
            run_at: None,
        }],
        now: chrono::Utc::now(),
    };
    if let Err(e) = writes::release(sql, pool, params).await {
        tracing::warn!(job = %lease.id, error = %e, "could not hand back a job delivered to a stopped worker; it is rescued when its lease lapses");
    }
}
