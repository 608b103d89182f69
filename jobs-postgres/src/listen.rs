//! LISTEN/NOTIFY: a task per connection relays the notifications of its channels, each to its
//! own relay: wake-ups on the schema's channel to the backend's [`WakeHub`](jobs_core::WakeHub)
//! and deliveries on the instance's own channel to its [`Deliveries`](crate::offers), on one
//! connection; job events on the schema's events channel to its
//! [`EventHub`](jobs_core::EventHub), on another.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jobs_core::Relay;
use sqlx::postgres::{PgListener, PgPoolOptions};
use sqlx::PgPool;
use tokio::task::JoinHandle;

/// The start of the listener's `application_name` (`jobs-listener:<schema>`), so it can be
/// told apart in `pg_stat_activity`.
const APPLICATION_NAME: &str = "jobs-listener";

/// The `application_name` of the listener of `channel` (PostgreSQL keeps its first 63 bytes).
pub(crate) fn application_name(channel: &str) -> String {
    format!("{APPLICATION_NAME}:{channel}")
}

/// How long the listener's connection may stay silent before it must answer a ping.
const HEARTBEAT: Duration = Duration::from_secs(15);

/// The running listener task; stopped when dropped.
#[derive(Debug)]
pub(crate) struct Listening(JoinHandle<()>);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Channels, each with the relay of its notifications.
pub(crate) type Routes = Vec<(String, Arc<dyn Relay>)>;

/// Starts listening on the channels of `routes` (the first names the connection). Waits for
/// the first `LISTEN` so that no notification sent after this returns is missed; if it fails,
/// the task keeps trying in the background while workers poll. `live` is set while the
/// channels are heard.
pub(crate) async fn start(pool: &PgPool, routes: Routes, live: Arc<AtomicBool>) -> Listening {
    let channel = routes.first().map_or("", |(channel, _)| channel.as_str());
    // A dedicated connection, outside the caller's pool, so it takes none of its slots.
    let options = (*pool.connect_options())
        .clone()
        .application_name(&application_name(channel));
    let own = PgPoolOptions::new()
        .max_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_lazy_with(options);
    let first = match connect(&own, &routes).await {
        Ok(listener) => {
            live.store(true, Ordering::Release);
            Some(listener)
        }
        Err(e) => {
            tracing::warn!(error = %e, channel, "cannot LISTEN yet; retrying in the background");
            None
        }
    };
    Listening(tokio::spawn(run(own, routes, live, first)))
}

async fn connect(pool: &PgPool, routes: &Routes) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener
        .listen_all(routes.iter().map(|(channel, _)| channel.as_str()))
        .await?;
    Ok(listener)
}

/// Forwards notifications; on a lost connection, reconnects with backoff, then tells every
/// relay that notifications sent meanwhile were missed. A connection silent for [`HEARTBEAT`]
/// must answer a `SELECT 1` within another, else it is taken for lost (a half-open connection
/// hears nothing, and says nothing of it).
async fn run(
    pool: PgPool,
    routes: Routes,
    live: Arc<AtomicBool>,
    mut listener: Option<PgListener>,
) {
    let channel = routes.first().map_or("", |(channel, _)| channel.as_str());
    let missed = || routes.iter().for_each(|(_, relay)| relay.missed());
    let mut pause = Duration::from_millis(50);
    loop {
        let Some(active) = listener.as_mut() else {
            match connect(&pool, &routes).await {
                Ok(reconnected) => {
                    tracing::info!(channel, "listening again");
                    listener = Some(reconnected);
                    live.store(true, Ordering::Release);
                    pause = Duration::from_millis(50);
                    missed();
                }
                Err(e) => {
                    tracing::warn!(error = %e, channel, retry_in_ms = pause.as_millis() as u64, "cannot LISTEN");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(5));
                }
            }
            continue;
        };
        let Ok(received) = tokio::time::timeout(HEARTBEAT, active.try_recv()).await else {
            let ping = sqlx::query("SELECT 1").execute(&mut *active);
            if !matches!(tokio::time::timeout(HEARTBEAT, ping).await, Ok(Ok(_))) {
                tracing::warn!(
                    channel,
                    "listener connection silent and unanswering; connecting again"
                );
                live.store(false, Ordering::Release);
                listener = None;
                missed();
            }
            continue;
        };
        match received {
            Ok(Some(notification)) => {
                let heard = notification.channel();
                if let Some((_, relay)) = routes.iter().find(|(channel, _)| channel == heard) {
                    relay.deliver(notification.payload());
                }
            }
            // The connection dropped and sqlx made it again (and its LISTENs).
            Ok(None) => {
                tracing::info!(channel, "listener reconnected");
                missed();
            }
            Err(e) => {
                tracing::warn!(error = %e, channel, "listener connection lost");
                live.store(false, Ordering::Release);
                listener = None;
                missed();
            }
        }
    }
}
