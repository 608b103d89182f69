//! Wake-ups: one pub/sub listener per backend turns the scripts' `PUBLISH`es into
//! `WakeHub::notify` calls, so idle workers fetch within a round trip of a job becoming ready.
//!
//! Scripts publish the queue's name on `<prefix>:wake` when they make a job ready (enqueue,
//! retry, release, rescue, a failure retried at once). In a cluster, a `PUBLISH` reaches the
//! subscribers of every node, so the listener subscribes on any one of them. The listener
//! reconnects by itself, with a growing pause, and then wakes every subscriber, since signals
//! may have been missed while it was away. A `PING` every [`HEARTBEAT`] notices a connection
//! that died without closing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use jobs_core::{Error, WakeHub, Wakeup};
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

/// The wake-up side of a backend: its hub and its listener task (started on first use, stopped
/// when the backend is dropped).
pub(crate) struct Wake {
    hub: Arc<WakeHub>,
    clients: Vec<Client>,
    channel: String,
    started: Mutex<Option<Started>>,
}

struct Started {
    ready: watch::Receiver<bool>,
    /// Dropping it stops the listener.
    _stop: oneshot::Sender<()>,
}

impl Wake {
    /// Wake-ups for `channel`, heard through the first reachable of `clients`.
    pub(crate) fn new(clients: Vec<Client>, channel: String) -> Self {
        Wake {
            hub: Arc::default(),
            clients,
            channel,
            started: Mutex::new(None),
        }
    }

    /// A subscription to `queues`, once the listener is listening.
    pub(crate) async fn subscribe(&self, queues: &[String]) -> Result<Wakeup, Error> {
        let wakeup = self.hub.subscribe(queues);
        let mut ready = self.start();
        let listening = tokio::time::timeout(READY_TIMEOUT, ready.wait_for(|r| *r)).await;
        match listening {
            Ok(Ok(_)) => Ok(wakeup),
            _ => Err(Error::Connect {
                target: format!("the Redis channel `{}`", self.channel),
                source: format!("no subscription within {READY_TIMEOUT:?}").into(),
            }),
        }
    }

    /// Starts the listener unless it runs; returns its readiness.
    fn start(&self) -> watch::Receiver<bool> {
        let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        let started = started.get_or_insert_with(|| {
            let (ready_tx, ready) = watch::channel(false);
            let (stop, stopped) = oneshot::channel();
            tokio::spawn(listen(
                self.clients.clone(),
                self.channel.clone(),
                self.hub.clone(),
                ready_tx,
                stopped,
            ));
            Started { ready, _stop: stop }
        });
        started.ready.clone()
    }
}

async fn listen(
    clients: Vec<Client>,
    channel: String,
    hub: Arc<WakeHub>,
    ready: watch::Sender<bool>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut pause = MIN_PAUSE;
    let mut node = 0;
    loop {
        let client = &clients[node % clients.len()];
        tokio::select! {
            _ = &mut stop => return,
            outcome = listen_once(client, &channel, &hub, &ready) => match outcome {
                Ok(()) => {
                    pause = MIN_PAUSE;
                    tracing::warn!(channel, "wake-up subscription lost; reconnecting");
                }
                Err(e) => {
                    node += 1;
                    tracing::warn!(channel, error = %e, retry_in_ms = pause.as_millis() as u64,
                        "cannot subscribe to wake-ups");
                }
            },
        }
        tokio::select! {
            _ = &mut stop => return,
            _ = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// Subscribes and relays messages until the connection is lost.
async fn listen_once(
    client: &Client,
    channel: &str,
    hub: &WakeHub,
    ready: &watch::Sender<bool>,
) -> redis::RedisResult<()> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(channel).await?;
    let (mut sink, mut messages) = pubsub.split();
    if ready.send_replace(true) {
        // A reconnection: whatever was published meanwhile was missed.
        hub.notify_all();
    }
    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    heartbeat.reset();
    loop {
        tokio::select! {
            message = messages.next() => match message {
                Some(message) => {
                    if let Ok(queue) = std::str::from_utf8(message.get_payload_bytes()) {
                        hub.notify(queue);
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
