//! Pub/sub listeners: one per channel and backend, relaying each message to a hub. Wake-ups:
//! scripts publish the queue's name on `<prefix>:wake` when they make a job ready (enqueue,
//! retry, release, rescue, a failure retried at once), and the [`WakeHub`] wakes that queue's
//! idle workers within a round trip; on the same connection, the backend's own delivery
//! channel brings the jobs leased straight to its idle workers (see the `deliveries` module).
//! Job events: publishers send JSON arrays of events on `<prefix>:events`, and the
//! [`EventHub`](jobs_core::EventHub) hands them to subscribers.
//!
//! In a cluster, a `PUBLISH` reaches the subscribers of every node, so a listener subscribes on
//! any one of them. A listener reconnects by itself, with a growing pause, and then tells its
//! hub that messages may have been missed while it was away. A `PING` every [`HEARTBEAT`]
//! notices a connection that died without closing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use jobs_core::{Error, Relay};
use redis::Client;
use tokio::sync::{oneshot, watch};

/// How often the listener checks that its connection is alive.
const HEARTBEAT: Duration = Duration::from_secs(15);
/// The first pause before reconnecting; it doubles up to [`MAX_PAUSE`].
const MIN_PAUSE: Duration = Duration::from_millis(50);
/// The longest pause between reconnection attempts.
const MAX_PAUSE: Duration = Duration::from_secs(2);
/// How long `subscribe` waits for the first subscription.
const READY_TIMEOUT: Duration = Duration::from_secs(5);

/// A channel's listener and its hub: the listener task starts on first use and stops when this
/// is dropped.
pub(crate) struct Listener<H> {
    hub: Arc<H>,
    clients: Vec<Client>,
    channel: String,
    /// Further channels heard on the same connection, each with its own relay.
    others: Vec<(String, Arc<dyn Relay>)>,
    started: Mutex<Option<Started>>,
}

struct Started {
    ready: watch::Receiver<bool>,
    /// Dropping it stops the listener.
    _stop: oneshot::Sender<()>,
}

impl<H: Relay + Default> Listener<H> {
    /// A listener for `channel`, heard through the first reachable of `clients`.
    pub(crate) fn new(clients: Vec<Client>, channel: String) -> Self {
        Listener {
            hub: Arc::default(),
            clients,
            channel,
            others: Vec::new(),
            started: Mutex::new(None),
        }
    }

    /// Also hears `channel` on the same connection, relaying its messages to `relay`.
    pub(crate) fn with(mut self, channel: String, relay: Arc<dyn Relay>) -> Self {
        self.others.push((channel, relay));
        self
    }

    /// The hub messages go to.
    pub(crate) fn hub(&self) -> &H {
        &self.hub
    }

    /// Returns once the listener is subscribed (starting it unless it runs): a message
    /// published from then on reaches the hub.
    pub(crate) async fn ready(&self) -> Result<(), Error> {
        let mut ready = self.start();
        let listening = tokio::time::timeout(READY_TIMEOUT, ready.wait_for(|r| *r)).await;
        match listening {
            Ok(Ok(_)) => Ok(()),
            _ => Err(Error::Connect {
                target: format!("the Redis channel `{}`", self.channel),
                source: format!("no subscription within {READY_TIMEOUT:?}").into(),
            }),
        }
    }

    /// Whether the listener is subscribed now (not while it reconnects).
    pub(crate) fn is_live(&self) -> bool {
        let started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        started.as_ref().is_some_and(|s| *s.ready.borrow())
    }

    /// Starts the listener unless it runs; returns its readiness.
    fn start(&self) -> watch::Receiver<bool> {
        let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        let started = started.get_or_insert_with(|| {
            let (ready_tx, ready) = watch::channel(false);
            let (stop, stopped) = oneshot::channel();
            let hub: Arc<dyn Relay> = self.hub.clone();
            let mut channels = vec![(self.channel.clone(), hub)];
            channels.extend(self.others.iter().cloned());
            tokio::spawn(listen(self.clients.clone(), channels, ready_tx, stopped));
            Started { ready, _stop: stop }
        });
        started.ready.clone()
    }
}

/// Channels and the relay of each.
type Channels = Vec<(String, Arc<dyn Relay>)>;

async fn listen(
    clients: Vec<Client>,
    channels: Channels,
    ready: watch::Sender<bool>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut pause = MIN_PAUSE;
    let mut node = 0;
    let channel = &channels[0].0;
    // Subscribed once: a later subscription is a reconnection.
    let mut before = false;
    loop {
        let client = &clients[node % clients.len()];
        tokio::select! {
            _ = &mut stop => return,
            outcome = listen_once(client, &channels, &ready, &mut before) => match outcome {
                Ok(()) => {
                    pause = MIN_PAUSE;
                    tracing::warn!(channel, "subscription lost; reconnecting");
                }
                Err(e) => {
                    node += 1;
                    tracing::warn!(channel, error = %e, retry_in_ms = pause.as_millis() as u64,
                        "cannot subscribe");
                }
            },
        }
        ready.send_replace(false);
        tokio::select! {
            _ = &mut stop => return,
            _ = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// Subscribes and relays messages until the connection is lost; `before`: it was subscribed
/// before (set once it is).
async fn listen_once(
    client: &Client,
    channels: &Channels,
    ready: &watch::Sender<bool>,
    before: &mut bool,
) -> redis::RedisResult<()> {
    let mut pubsub = client.get_async_pubsub().await?;
    let names: Vec<&str> = channels.iter().map(|(name, _)| name.as_str()).collect();
    pubsub.subscribe(names).await?;
    let (mut sink, mut messages) = pubsub.split();
    ready.send_replace(true);
    if std::mem::replace(before, true) {
        // A reconnection: whatever was published meanwhile was missed.
        for (_, relay) in channels {
            relay.missed();
        }
    }
    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    heartbeat.reset();
    loop {
        tokio::select! {
            message = messages.next() => match message {
                Some(message) => {
                    let relay = channels
                        .iter()
                        .find(|(name, _)| name.as_bytes() == message.get_channel_name().as_bytes());
                    let text = std::str::from_utf8(message.get_payload_bytes());
                    if let (Some((_, relay)), Ok(text)) = (relay, text) {
                        relay.deliver(text);
                    }
                }
                None => return Ok(()),
            },
            _ = heartbeat.tick() => {
                let alive = tokio::time::timeout(HEARTBEAT, sink.ping::<redis::Value>()).await;
                if !matches!(alive, Ok(Ok(_))) {
                    return Ok(());
                }
            }
        }
    }
}
