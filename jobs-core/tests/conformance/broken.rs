//! Deliberately broken backends: the suite must fail on each, or its checks prove nothing.

use std::any::Any;

use async_trait::async_trait;
use jobs_core::testing::{checks, run};
use jobs_core::*;

/// What the wrapped memory backend gets wrong.
#[derive(Clone, Copy)]
enum Flaw {
    /// Accepts completions whatever their lease token.
    NoFencing,
    /// Hands out ready jobs newest first.
    Lifo,
    /// Forgets the errors of failed attempts.
    ForgetsErrors,
    /// Never rescues lapsed leases.
    NeverRescues,
}

struct Broken {
    inner: MemoryBackend,
    flaw: Flaw,
}

#[async_trait]
impl Backend for Broken {
    async fn enqueue(&self, p: EnqueueParams) -> Result<Vec<Enqueued>, Error> {
        self.inner.enqueue(p).await
    }
    async fn enqueue_cron(&self, p: CronTickParams) -> Result<Option<JobId>, Error> {
        self.inner.enqueue_cron(p).await
    }
    async fn fetch(&self, p: FetchParams) -> Result<Vec<LeasedJob>, Error> {
        if let Flaw::Lifo = self.flaw {
            let mut all = self
                .inner
                .list(ListParams {
                    limit: usize::MAX,
                    ..Default::default()
                })
                .await?;
            all.retain(|r| r.status == JobStatus::Pending && p.queues.contains(&r.queue));
            let Some(newest) = all.last() else {
                return Ok(vec![]);
            };
            // Take everything, keep the newest, hand the rest back.
            let mut got = self
                .inner
                .fetch(FetchParams {
                    limit: usize::MAX,
                    ..p.clone()
                })
                .await?;
            let keep = got
                .iter()
                .position(|j| j.record.id == newest.id)
                .unwrap_or(0);
            let chosen = got.remove(keep);
            let rest = got.iter().map(LeasedJob::lease).collect();
            self.inner
                .release(ReleaseParams {
                    items: rest,
                    now: p.now,
                })
                .await?;
            return Ok(vec![chosen]);
        }
        self.inner.fetch(p).await
    }
    async fn complete(&self, mut p: CompleteParams) -> Result<Vec<bool>, Error> {
        if let Flaw::NoFencing = self.flaw {
            for item in &mut p.items {
                if let Some(lease) = self.inner.job(item.lease.id).await?.and_then(|r| r.lease) {
                    item.lease.token = lease.token;
                }
            }
        }
        self.inner.complete(p).await
    }
    async fn fail(&self, p: FailParams) -> Result<Vec<bool>, Error> {
        self.inner.fail(p).await
    }
    async fn release(&self, p: ReleaseParams) -> Result<Vec<bool>, Error> {
        self.inner.release(p).await
    }
    async fn renew(&self, p: RenewParams) -> Result<Vec<bool>, Error> {
        self.inner.renew(p).await
    }
    async fn progress(&self, p: ProgressParams) -> Result<bool, Error> {
        self.inner.progress(p).await
    }
    async fn job(&self, id: JobId) -> Result<Option<JobRecord>, Error> {
        let mut found = self.inner.job(id).await?;
        if let (Flaw::ForgetsErrors, Some(r)) = (self.flaw, found.as_mut()) {
            r.errors.truncate(1);
        }
        Ok(found)
    }
    async fn list(&self, p: ListParams) -> Result<Vec<JobRecord>, Error> {
        self.inner.list(p).await
    }
    async fn retry(&self, p: RetryParams) -> Result<bool, Error> {
        self.inner.retry(p).await
    }
    async fn delete(&self, p: DeleteParams) -> Result<bool, Error> {
        self.inner.delete(p).await
    }
    async fn cancel(&self, p: CancelParams) -> Result<bool, Error> {
        self.inner.cancel(p).await
    }
    async fn rescue(&self, p: RescueParams) -> Result<Vec<JobId>, Error> {
        match self.flaw {
            Flaw::NeverRescues => Ok(vec![]),
            _ => self.inner.rescue(p).await,
        }
    }
    async fn prune(&self, p: PruneParams) -> Result<u64, Error> {
        self.inner.prune(p).await
    }
    async fn counts(&self, p: CountsParams) -> Result<QueueCounts, Error> {
        self.inner.counts(p).await
    }
    async fn subscribe(&self, queues: &[String]) -> Result<Wakeup, Error> {
        self.inner.subscribe(queues).await
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Runs `check` on a backend with `flaw` and says whether the check failed.
fn fails(flaw: Flaw, check: fn(AnyBackend) -> BoxFuture<()>) -> bool {
    let make = move || async move {
        Broken {
            inner: MemoryBackend::new(),
            flaw,
        }
    };
    std::panic::catch_unwind(|| run(make, check)).is_err()
}

#[test]
fn fencing_check_catches_a_backend_without_fencing() {
    assert!(fails(Flaw::NoFencing, |b| Box::pin(
        checks::stale_lease_is_fenced(b)
    )));
}

#[test]
fn ordering_check_catches_lifo() {
    assert!(fails(Flaw::Lifo, |b| Box::pin(
        checks::priority_then_run_at_then_fifo(b)
    )));
}

#[test]
fn retry_check_catches_lost_errors() {
    assert!(fails(Flaw::ForgetsErrors, |b| Box::pin(
        checks::failures_retry_then_die_with_every_error(b)
    )));
}

#[test]
fn rescue_check_catches_a_backend_that_never_rescues() {
    assert!(fails(Flaw::NeverRescues, |b| Box::pin(
        checks::rescue_without_attempts_left_is_dead(b)
    )));
}

#[test]
fn the_same_checks_pass_on_the_sound_backend() {
    let make = || async { MemoryBackend::new() };
    run(make, |b| Box::pin(checks::stale_lease_is_fenced(b)));
    run(make, |b| {
        Box::pin(checks::priority_then_run_at_then_fifo(b))
    });
}
