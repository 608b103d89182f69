//! What a backend instance does with the jobs its delivery channel brings (see
//! [`deliveries`](crate::deliveries)): each goes to its worker's subscription, or back to the
//! store when the worker has none here, and one that does not decode is failed as dead; and how
//! a stopping worker's deliveries end.

use std::sync::Arc;

use jobs_core::{EndDeliveriesParams, Error, Failure, LeaseRef, LeasedJob, Release, ReleaseParams};

use crate::backend::Inner;
use crate::deliveries::Recipient;
use crate::scripts::SCRIPTS;
use crate::RedisBackend;

impl Recipient for Inner {
    fn take(self: Arc<Self>, worker: &str, job: LeasedJob) {
        let backend = RedisBackend::of(self);
        if let Some(job) = backend.wake_hub().deliver(worker, job) {
            tokio::spawn(async move { backend.hand_back(job.lease()).await });
        }
    }

    fn fail(self: Arc<Self>, failure: Failure) {
        let backend = RedisBackend::of(self);
        tokio::spawn(async move {
            backend
                .fail_corrupt(vec![failure], chrono::Utc::now())
                .await
        });
    }
}

impl RedisBackend {
    /// Withdraws `p.worker`'s offers in each of its queues and waits until the mark that
    /// follows its last delivery of each is heard.
    pub(crate) async fn end_deliveries_to(&self, p: EndDeliveriesParams) -> Result<(), Error> {
        let ended = self.withdraw_and_hear(&p).await;
        self.deliveries().ledger().forget(&p.worker);
        ended
    }

    /// The work of [`end_deliveries_to`](Self::end_deliveries_to), which then forgets the
    /// worker whatever came of it.
    async fn withdraw_and_hear(&self, p: &EndDeliveriesParams) -> Result<(), Error> {
        let mut queues = p.queues.clone();
        queues.sort_unstable();
        queues.dedup();
        let ledger = self.deliveries().ledger();
        let mut ended = Vec::with_capacity(queues.len());
        for queue in &queues {
            ended.push(ledger.expect_end(&p.worker, queue));
            let mut inv = self.timeless_invocation(&SCRIPTS.withdraw, queue);
            inv.arg(&p.worker).arg(self.delivery_channel());
            self.run::<i64>(&inv).await?;
        }
        ledger.await_ends(&p.worker, ended).await
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
        if let Err(e) = self.release_jobs(params).await {
            tracing::warn!(job = %lease.id, error = %e, "could not hand back a job delivered to a stopped worker; it is rescued when its lease lapses");
        }
    }
}
