//! Job events: what happened to a job (enqueued, started, progress, completed, failed, dead),
//! told to the worker's hooks and, through the store's own channel (PostgreSQL LISTEN/NOTIFY,
//! Redis pub/sub, in-process for memory), to subscribers in any process.
//!
//! Delivery across processes is at most once: a subscriber whose connection drops misses what
//! was published meanwhile, and is told so ([`Received::Missed`]), so it can read what it
//! cares about again. A backend relays what its listener hears into an [`EventHub`], which
//! fans it out to the [`EventStream`]s of the process.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use jobs_core::{EventHub, EventKind, JobEvent, JobId, Received, Timestamp};
//!
//! let hub = EventHub::default();
//! let mut stream = hub.subscribe(vec!["email".into()]);
//! let event = JobEvent::new(JobId::new(), "welcome", "email", EventKind::Completed, 1, Timestamp::UNIX_EPOCH);
//! hub.send([event.clone()]);
//! assert_eq!(stream.recv().await, Some(Received::Event(event)));
//! # });
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, mpsc};

use crate::model::{JobId, JobRecord, Timestamp};
use crate::wake::Relay;

/// Events a subscriber may fall behind by before it is told it missed some.
const BACKLOG: usize = 4_096;
/// The longest error message an event carries (the record keeps the whole error).
const ERROR_CHARS: usize = 200;

/// What happened to a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "percent")]
pub enum EventKind {
    /// It was stored.
    Enqueued,
    /// A worker started an attempt.
    Started,
    /// Its handler reported progress, in percent.
    Progress(u8),
    /// It completed.
    Completed,
    /// An attempt failed; see `retry_at` for whether it runs again.
    Failed,
    /// It went to the dead-letter set.
    Dead,
}

impl EventKind {
    /// Whether the job has finished for good (completed or dead).
    pub fn is_final(self) -> bool {
        matches!(self, EventKind::Completed | EventKind::Dead)
    }
}

/// One event of one job: what the hooks get, and what subscribers receive. Its name and queue
/// are shared with the record it was made of (see [`JobRecord`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobEvent {
    /// The job.
    pub id: JobId,
    /// Its stored name.
    pub name: Arc<str>,
    /// Its queue.
    pub queue: Arc<str>,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
    /// The attempt, from 1 (0 before the first).
    pub attempt: u32,
    /// The attempt's error, for failures (at most 200 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the job runs again, for a failure that will be retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<Timestamp>,
    /// When it happened.
    pub at: Timestamp,
}

impl JobEvent {
    /// An event without error or retry time.
    pub fn new(
        id: JobId,
        name: impl Into<Arc<str>>,
        queue: impl Into<Arc<str>>,
        kind: EventKind,
        attempt: u32,
        at: Timestamp,
    ) -> Self {
        JobEvent {
            id,
            name: name.into(),
            queue: queue.into(),
            kind,
            attempt,
            error: None,
            retry_at: None,
            at,
        }
    }

    /// An event of `record`'s current attempt.
    pub fn of(record: &JobRecord, kind: EventKind, at: Timestamp) -> Self {
        JobEvent::new(
            record.id,
            record.name.clone(),
            record.queue.clone(),
            kind,
            record.attempt,
            at,
        )
    }

    /// The failure of an attempt with `error`, retried at `retry_at` (or dead without one).
    pub fn failed(mut self, error: &str, retry_at: Option<Timestamp>) -> Self {
        self.kind = EventKind::Failed;
        self.error = Some(error.chars().take(ERROR_CHARS).collect());
        self.retry_at = retry_at;
        self
    }

    /// The same event, of another kind.
    pub fn as_kind(&self, kind: EventKind) -> Self {
        JobEvent {
            kind,
            ..self.clone()
        }
    }
}

/// Encodes `events` as JSON arrays of at most `max_bytes` each (one event longer than that
/// goes alone), for a channel that limits its messages (PostgreSQL's NOTIFY takes 8,000 bytes).
pub fn encode_events(events: &[JobEvent], max_bytes: usize) -> Vec<String> {
    let mut messages = Vec::new();
    let mut message = String::from("[");
    for event in events {
        let Ok(json) = serde_json::to_string(event) else {
            continue;
        };
        if message.len() > 1 && message.len() + json.len() + 2 > max_bytes {
            message.push(']');
            messages.push(std::mem::replace(&mut message, String::from("[")));
        }
        if message.len() > 1 {
            message.push(',');
        }
        message.push_str(&json);
    }
    if message.len() > 1 {
        message.push(']');
        messages.push(message);
    }
    messages
}

/// What a subscriber gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Received {
    /// An event.
    Event(JobEvent),
    /// Events may have been missed (the subscriber fell behind, or the connection to the store
    /// was lost and made again): read again what matters.
    Missed,
}

#[derive(Clone, Debug)]
enum Delivery {
    Event(Arc<JobEvent>),
    Missed,
}

/// The sending side, kept by a backend: fans the events its listener hears out to this
/// process's subscribers.
#[derive(Debug)]
pub struct EventHub {
    tx: broadcast::Sender<Delivery>,
}

impl Default for EventHub {
    fn default() -> Self {
        EventHub {
            tx: broadcast::channel(BACKLOG).0,
        }
    }
}

impl EventHub {
    /// A subscription to the events of `queues` (every queue when empty).
    pub fn subscribe(&self, queues: Vec<String>) -> EventStream {
        EventStream {
            rx: self.tx.subscribe(),
            queues,
        }
    }

    /// Hands `events` to the subscribers.
    pub fn send(&self, events: impl IntoIterator<Item = JobEvent>) {
        for event in events {
            let _ = self.tx.send(Delivery::Event(Arc::new(event)));
        }
    }

    /// Tells every subscriber it may have missed events.
    pub fn missed(&self) {
        let _ = self.tx.send(Delivery::Missed);
    }

    /// Whether anyone in this process subscribes.
    pub fn has_subscribers(&self) -> bool {
        self.tx.receiver_count() > 0
    }
}

impl Relay for EventHub {
    /// A message of [`encode_events`]; one that does not decode is dropped with a warning.
    fn deliver(&self, message: &str) {
        match serde_json::from_str::<Vec<JobEvent>>(message) {
            Ok(events) => self.send(events),
            Err(e) => {
                tracing::warn!(error = %e, "dropped a job event message that does not decode")
            }
        }
    }

    fn missed(&self) {
        EventHub::missed(self);
    }
}

/// A boxed future, as the backends' send and probe functions return.
type Boxed<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'static>>;

/// How a backend sends a batch of events over its channel.
pub type SendEvents = Arc<dyn Fn(Vec<JobEvent>) -> Boxed<()> + Send + Sync>;

/// Tells whether any process subscribes to a backend's job events.
pub type ProbeListeners = Arc<dyn Fn() -> Boxed<bool> + Send + Sync>;

/// How often a [`Publisher`] asks whether anyone listens.
const PROBE_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// A backend's sending side: [`publish`](Publisher::publish) returns at once, and a task (started
/// on first use, ended with the publisher) sends what was published, one send at a time, each
/// with everything published while the previous one was under way. With a probe, another task
/// asks every 200 ms whether any process listens, and while none does, events are dropped
/// unsent ([`is_heard`](Publisher::is_heard) lets the caller skip building them).
pub struct Publisher {
    send: SendEvents,
    probe: Option<ProbeListeners>,
    heard: Arc<AtomicBool>,
    queue: OnceLock<mpsc::UnboundedSender<Vec<JobEvent>>>,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Publisher")
    }
}

impl Publisher {
    /// A publisher sending through `send` (which reports its own failures: events are at most
    /// once), and, with `probe`, only while someone listens.
    pub fn new(send: SendEvents, probe: Option<ProbeListeners>) -> Self {
        Publisher {
            send,
            probe,
            heard: Arc::new(AtomicBool::new(true)),
            queue: OnceLock::new(),
        }
    }

    /// Whether anyone listened at the last probe (always, without a probe). Call it within a
    /// Tokio runtime: the first call starts the publisher's tasks.
    pub fn is_heard(&self) -> bool {
        self.start();
        self.heard.load(Ordering::Relaxed)
    }

    /// Queues `events` for the next send, unless nobody listens. Call it within a Tokio
    /// runtime.
    pub fn publish(&self, events: Vec<JobEvent>) {
        if events.is_empty() || !self.is_heard() {
            return;
        }
        let _ = self.start().send(events);
    }

    /// The sending task's queue, starting the tasks on first use.
    fn start(&self) -> &mpsc::UnboundedSender<Vec<JobEvent>> {
        self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(send_all(rx, self.send.clone()));
            if let Some(probe) = &self.probe {
                tokio::spawn(probe_listeners(probe.clone(), Arc::downgrade(&self.heard)));
            }
            tx
        })
    }
}

/// Probes for listeners every [`PROBE_EVERY`] until the publisher is dropped.
async fn probe_listeners(probe: ProbeListeners, heard: std::sync::Weak<AtomicBool>) {
    loop {
        let listening = probe().await;
        let Some(heard) = heard.upgrade() else {
            return;
        };
        heard.store(listening, Ordering::Relaxed);
        drop(heard);
        tokio::time::sleep(PROBE_EVERY).await;
    }
}

/// Sends until the publisher is dropped, coalescing what queued up during each send.
async fn send_all(mut queue: mpsc::UnboundedReceiver<Vec<JobEvent>>, send: SendEvents) {
    let mut batches = Vec::new();
    while queue.recv_many(&mut batches, 256).await > 0 {
        let events: Vec<JobEvent> = batches.drain(..).flatten().collect();
        send(events).await;
    }
}

/// A subscriber's stream of events, from [`Backend::events`](crate::Backend::events).
#[derive(Debug)]
pub struct EventStream {
    rx: broadcast::Receiver<Delivery>,
    queues: Vec<String>,
}

impl EventStream {
    /// The next event of the subscribed queues, or [`Received::Missed`]; `None` once the
    /// backend is gone.
    pub async fn recv(&mut self) -> Option<Received> {
        loop {
            match self.rx.recv().await {
                Ok(Delivery::Event(event)) => {
                    if self.queues.is_empty() || self.queues.iter().any(|q| **q == *event.queue) {
                        return Some(Received::Event((*event).clone()));
                    }
                }
                Ok(Delivery::Missed) | Err(broadcast::error::RecvError::Lagged(_)) => {
                    return Some(Received::Missed)
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: u32) -> JobEvent {
        JobEvent::new(
            JobId::new(),
            "n",
            "q",
            EventKind::Progress(50),
            n,
            Timestamp::UNIX_EPOCH,
        )
        .failed(&"x".repeat(300), None)
    }

    #[test]
    fn messages_stay_within_their_limit_and_decode_back() {
        let events: Vec<JobEvent> = (0..50).map(event).collect();
        let messages = encode_events(&events, 2_000);
        assert!(messages.len() > 1);
        let mut back = Vec::new();
        for message in &messages {
            assert!(message.len() <= 2_000, "{}", message.len());
            back.extend(serde_json::from_str::<Vec<JobEvent>>(message).unwrap());
        }
        assert_eq!(back, events);
        assert_eq!(back[0].error.as_ref().unwrap().len(), ERROR_CHARS);
    }

    #[tokio::test]
    async fn a_stream_gets_its_queues_and_hears_of_gaps() {
        let hub = EventHub::default();
        let mut stream = hub.subscribe(vec!["q".into()]);
        let mut other = event(1);
        other.queue = "other".into();
        let mine = event(2);
        hub.send([other, mine.clone()]);
        hub.missed();
        assert_eq!(stream.recv().await, Some(Received::Event(mine)));
        assert_eq!(stream.recv().await, Some(Received::Missed));
    }
}
