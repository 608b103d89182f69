//! Wake-ups: a backend tells idle workers that jobs may be ready, instead of their polling, or
//! hands an idle worker a job it leased to it straight away (see
//! [`FetchParams::deliver`](crate::FetchParams::deliver)).

use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Notify;

use crate::model::LeasedJob;

/// Where a backend's listener hands the messages of a channel: wake-ups ([`WakeHub`]: a
/// message names a queue) or job events ([`EventHub`](crate::EventHub)).
pub trait Relay: Send + Sync + 'static {
    /// One message as published.
    fn deliver(&self, message: &str);
    /// The listener was away (its connection lost and made again): messages may be missed.
    fn missed(&self);
}

/// The listening side: a worker awaits [`Wakeup::wait`] while idle.
///
/// A signal sent while nobody waits is kept (once), so none is lost between a fetch that found
/// nothing and the wait that follows it.
#[derive(Debug)]
pub struct Wakeup {
    inbox: Arc<Inbox>,
}

/// What one subscription receives: signals, and the jobs delivered to its worker (`None` once
/// closed).
#[derive(Debug)]
struct Inbox {
    notify: Notify,
    delivered: Mutex<Option<Vec<LeasedJob>>>,
}

impl Default for Inbox {
    fn default() -> Self {
        Inbox {
            notify: Notify::new(),
            delivered: Mutex::new(Some(Vec::new())),
        }
    }
}

impl Wakeup {
    /// Returns when jobs may be ready, or have been delivered.
    pub async fn wait(&self) {
        self.inbox.notify.notified().await
    }

    /// Takes the jobs delivered to the subscribing worker so far, leased to it (see
    /// [`FetchParams::deliver`](crate::FetchParams::deliver)), in the order they came.
    pub fn delivered(&self) -> Vec<LeasedJob> {
        self.inbox
            .lock()
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Takes the jobs delivered so far, as [`delivered`](Self::delivered), and takes no more:
    /// a job delivered from then on goes back to whoever delivers it (see
    /// [`WakeHub::deliver`]), for a stopping worker's last look.
    pub fn close(&self) -> Vec<LeasedJob> {
        self.inbox.lock().take().unwrap_or_default()
    }
}

impl Inbox {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Vec<LeasedJob>>> {
        self.delivered.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One subscription as the hub keeps it: its queues, its worker, and its inbox while it lives.
#[derive(Debug)]
struct Subscriber {
    queues: Vec<String>,
    worker: Option<String>,
    inbox: Weak<Inbox>,
}

/// The sending side, kept by a backend: fans each signal out to the subscribers of its queue.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use jobs_core::WakeHub;
///
/// let hub = WakeHub::default();
/// let wakeup = hub.subscribe(&["email".to_string()], None);
/// hub.notify("email");
/// wakeup.wait().await; // returns at once: the signal was kept
/// # });
/// ```
#[derive(Debug, Default)]
pub struct WakeHub {
    subscribers: Mutex<Vec<Subscriber>>,
}

impl WakeHub {
    fn subscribers(&self) -> std::sync::MutexGuard<'_, Vec<Subscriber>> {
        self.subscribers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new subscription to the given queues; with a `worker`, jobs delivered to that worker
    /// ([`deliver`](Self::deliver)) reach it too.
    pub fn subscribe(&self, queues: &[String], worker: Option<&str>) -> Wakeup {
        let inbox = Arc::new(Inbox::default());
        let mut subscribers = self.subscribers();
        subscribers.retain(|s| s.inbox.strong_count() > 0);
        subscribers.push(Subscriber {
            queues: queues.to_vec(),
            worker: worker.map(str::to_string),
            inbox: Arc::downgrade(&inbox),
        });
        Wakeup { inbox }
    }

    /// Wakes every subscriber of `queue`.
    pub fn notify(&self, queue: &str) {
        for s in self.subscribers().iter() {
            if s.queues.iter().any(|q| q == queue) {
                if let Some(inbox) = s.inbox.upgrade() {
                    inbox.notify.notify_one();
                }
            }
        }
    }

    /// Wakes every subscriber (after a reconnect, when signals may have been missed).
    pub fn notify_all(&self) {
        for s in self.subscribers().iter() {
            if let Some(inbox) = s.inbox.upgrade() {
                inbox.notify.notify_one();
            }
        }
    }

    /// Hands `job`, leased to `worker`, to that worker's subscription and wakes it; returns the
    /// job when the worker has none here, or a closed one (it stopped), for the caller to hand
    /// back to the store.
    #[must_use = "a job that found no worker must be handed back"]
    pub fn deliver(&self, worker: &str, job: LeasedJob) -> Option<LeasedJob> {
        let inbox = self
            .subscribers()
            .iter()
            .filter(|s| s.worker.as_deref() == Some(worker))
            .find_map(|s| s.inbox.upgrade());
        let Some(inbox) = inbox else {
            return Some(job);
        };
        match inbox.lock().as_mut() {
            Some(delivered) => delivered.push(job),
            None => return Some(job),
        }
        inbox.notify.notify_one();
        None
    }

    /// Whether anyone listens to `queue`, so a backend can skip sending signals nobody hears.
    pub fn has_subscribers(&self, queue: &str) -> bool {
        self.subscribers()
            .iter()
            .any(|s| s.inbox.strong_count() > 0 && s.queues.iter().any(|q| q == queue))
    }
}

impl Relay for WakeHub {
    /// A message names the queue whose subscribers to wake.
    fn deliver(&self, message: &str) {
        self.notify(message);
    }

    /// Wakes everyone: a missed signal would leave a worker asleep.
    fn missed(&self) {
        self.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::record;
    use crate::model::LeaseToken;

    fn leased() -> LeasedJob {
        LeasedJob {
            record: record(0),
            token: LeaseToken::new(),
            reserved: false,
        }
    }

    #[tokio::test]
    async fn a_delivery_reaches_its_worker_alone_and_wakes_it() {
        let hub = WakeHub::default();
        let queues = ["q".to_string()];
        let first = hub.subscribe(&queues, Some("w1"));
        let other = hub.subscribe(&queues, Some("w2"));
        let job = leased();
        let id = job.record.id;
        assert!(hub.deliver("w1", job).is_none());
        first.wait().await; // woken: returns at once
        let got = first.delivered();
        assert_eq!(got.iter().map(|j| j.record.id).collect::<Vec<_>>(), [id]);
        assert!(first.delivered().is_empty(), "taken once");
        assert!(other.delivered().is_empty());
    }

    #[test]
    fn a_delivery_to_a_worker_gone_comes_back() {
        let hub = WakeHub::default();
        let wakeup = hub.subscribe(&["q".to_string()], Some("w1"));
        drop(wakeup);
        let job = leased();
        let id = job.record.id;
        let back = hub.deliver("w1", job).expect("nobody to take it");
        assert_eq!(back.record.id, id);
        let plain = hub.subscribe(&["q".to_string()], None);
        assert!(
            hub.deliver("w1", leased()).is_some(),
            "a plain subscription takes none"
        );
        assert!(plain.delivered().is_empty());
    }

    #[test]
    fn a_closed_subscription_takes_no_more() {
        let hub = WakeHub::default();
        let wakeup = hub.subscribe(&["q".to_string()], Some("w1"));
        assert!(hub.deliver("w1", leased()).is_none());
        assert_eq!(wakeup.close().len(), 1, "what came before");
        assert!(
            hub.deliver("w1", leased()).is_some(),
            "back to the deliverer"
        );
        assert!(wakeup.delivered().is_empty());
    }
}
