//! Wake-ups: a backend tells idle workers that jobs may be ready, instead of their polling.

use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Notify;

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
    notify: Arc<Notify>,
}

impl Wakeup {
    /// Returns when jobs may be ready.
    pub async fn wait(&self) {
        self.notify.notified().await
    }
}

/// The sending side, kept by a backend: fans each signal out to the subscribers of its queue.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use jobs_core::WakeHub;
///
/// let hub = WakeHub::default();
/// let wakeup = hub.subscribe(&["email".to_string()]);
/// hub.notify("email");
/// wakeup.wait().await; // returns at once: the signal was kept
/// # });
/// ```
#[derive(Debug, Default)]
pub struct WakeHub {
    subscribers: Mutex<Vec<(Vec<String>, Weak<Notify>)>>,
}

impl WakeHub {
    /// A new subscription to the given queues.
    pub fn subscribe(&self, queues: &[String]) -> Wakeup {
        let notify = Arc::new(Notify::new());
        let mut subscribers = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        subscribers.retain(|(_, weak)| weak.strong_count() > 0);
        subscribers.push((queues.to_vec(), Arc::downgrade(&notify)));
        Wakeup { notify }
    }

    /// Wakes every subscriber of `queue`.
    pub fn notify(&self, queue: &str) {
        let subscribers = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        for (queues, weak) in subscribers.iter() {
            if queues.iter().any(|q| q == queue) {
                if let Some(notify) = weak.upgrade() {
                    notify.notify_one();
                }
            }
        }
    }

    /// Wakes every subscriber (after a reconnect, when signals may have been missed).
    pub fn notify_all(&self) {
        let subscribers = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        for (_, weak) in subscribers.iter() {
            if let Some(notify) = weak.upgrade() {
                notify.notify_one();
            }
        }
    }

    /// Whether anyone listens to `queue`, so a backend can skip sending signals nobody hears.
    pub fn has_subscribers(&self, queue: &str) -> bool {
        let subscribers = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        subscribers
            .iter()
            .any(|(queues, weak)| weak.strong_count() > 0 && queues.iter().any(|q| q == queue))
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
