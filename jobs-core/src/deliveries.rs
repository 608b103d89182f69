//! The bookkeeping of a backend instance that delivers jobs to idle workers (see
//! [`FetchParams::deliver`](crate::FetchParams::deliver)), shared by the backends that do:
//! what each worker heard of its offer's deliveries, and the marks that end a stopping
//! worker's deliveries.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::error::Error;

/// How long a stopping worker waits to hear the marks that end its deliveries.
pub const END_WAIT: Duration = Duration::from_secs(2);

/// What a backend instance heard of the deliveries to its workers.
///
/// An offer is named by the store (any text); its deliveries are counted from 1 in the order
/// they were made, which is the order they are heard in. A worker's next fetch tells the store
/// how many of its offer's deliveries it heard, so that the store counts the rest as on their
/// way and no idle place is offered twice.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use jobs_core::DeliveryLedger;
///
/// let ledger = DeliveryLedger::default();
/// ledger.hear("w1", "offer-a", 1);
/// ledger.hear("w1", "offer-a", 2);
/// assert_eq!(ledger.heard("w1"), ("offer-a".to_string(), 2));
///
/// // A stopping worker awaits the mark that follows its last delivery.
/// let ended = ledger.expect_end("w1", "email");
/// ledger.end("w1", "email");
/// ledger.await_ends("w1", vec![ended]).await.unwrap();
/// ledger.forget("w1");
/// assert_eq!(ledger.heard("w1"), (String::new(), 0));
/// # });
/// ```
#[derive(Debug, Default)]
pub struct DeliveryLedger {
    /// Per worker, the offer of the last delivery heard and how many of its deliveries were.
    heard: Mutex<HashMap<String, (String, u32)>>,
    /// The end marks awaited, by worker and mark.
    ends: Mutex<HashMap<(String, String), oneshot::Sender<()>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl DeliveryLedger {
    /// Counts delivery `nth` (from 1) of `offer` to `worker` as heard.
    pub fn hear(&self, worker: &str, offer: &str, nth: u32) {
        lock(&self.heard).insert(worker.to_string(), (offer.to_string(), nth));
    }

    /// The offer of the last delivery to `worker` heard, and how many of its deliveries were
    /// (`""` and 0 when none).
    pub fn heard(&self, worker: &str) -> (String, u32) {
        lock(&self.heard).get(worker).cloned().unwrap_or_default()
    }

    /// Awaits the end `mark` of `worker`'s deliveries: the receiver hears it once
    /// [`end`](Self::end) is called with the same two.
    pub fn expect_end(&self, worker: &str, mark: &str) -> oneshot::Receiver<()> {
        let (end, ended) = oneshot::channel();
        lock(&self.ends).insert((worker.to_string(), mark.to_string()), end);
        ended
    }

    /// The end `mark` of `worker`'s deliveries was heard.
    pub fn end(&self, worker: &str, mark: &str) {
        if let Some(end) = lock(&self.ends).remove(&(worker.to_string(), mark.to_string())) {
            let _ = end.send(());
        }
    }

    /// Waits up to [`END_WAIT`] for the `ended` marks of a stopping `worker`.
    pub async fn await_ends(
        &self,
        worker: &str,
        ended: Vec<oneshot::Receiver<()>>,
    ) -> Result<(), Error> {
        let all = async {
            for end in ended {
                let _ = end.await;
            }
        };
        tokio::time::timeout(END_WAIT, all).await.map_err(|_| {
            Error::backend(format!(
                "the end of the deliveries to worker {worker} was not heard within {END_WAIT:?}"
            ))
        })?;
        Ok(())
    }

    /// Forgets `worker`, which stopped: what was heard of its deliveries, and the ends it
    /// awaits.
    pub fn forget(&self, worker: &str) {
        lock(&self.heard).remove(worker);
        lock(&self.ends).retain(|(w, _), _| w != worker);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_end_not_heard_in_time_is_an_error_and_forgetting_keeps_other_workers() {
        let ledger = DeliveryLedger::default();
        ledger.hear("w", "o", 3);
        let ended = ledger.expect_end("w", "q");
        let other = ledger.expect_end("v", "q");
        let err = ledger.await_ends("w", vec![ended]).await.unwrap_err();
        assert!(err.to_string().contains("worker w"), "{err}");
        ledger.forget("w");
        assert_eq!(ledger.heard("w"), (String::new(), 0));
        // Another worker's awaited end is kept.
        ledger.end("v", "q");
        assert!(other.await.is_ok());
    }
}
