//! LISTEN/NOTIFY: one task per channel and backend relays notifications to a hub: wake-ups on
//! the schema's channel to its [`WakeHub`](jobs_core::WakeHub), job events on its events channel
//! to its [`EventHub`](jobs_core::EventHub).

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

/// The running listener task; stopped when dropped.
#[derive(Debug)]
pub(crate) struct Listening(JoinHandle<()>);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts listening on `channel`. Waits for the first `LISTEN` so that no notification sent
/// after this returns is missed; if it fails, the task keeps trying in the background while
/// workers poll.
pub(crate) async fn start(pool: &PgPool, channel: &str, hub: Arc<dyn Relay>) -> Listening {
    // A dedicated connection, outside the caller's pool, so it takes none of its slots.
    let options = (*pool.connect_options())
        .clone()
        .application_name(&application_name(channel));
    let own = PgPoolOptions::new()
        .max_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_lazy_with(options);
    let first = match connect(&own, channel).await {
        Ok(listener) => Some(listener),
        Err(e) => {
            tracing::warn!(error = %e, channel, "cannot LISTEN yet; retrying in the background");
            None
        }
    };
    Listening(tokio::spawn(run(own, channel.to_string(), hub, first)))
}

async fn connect(pool: &PgPool, channel: &str) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(channel).await?;
    Ok(listener)
}

/// Forwards notifications; on a lost connection, reconnects with backoff, then tells the hub
/// that notifications sent meanwhile were missed.
async fn run(pool: PgPool, channel: String, hub: Arc<dyn Relay>, mut listener: Option<PgListener>) {
    let mut pause = Duration::from_millis(50);
    loop {
        let Some(active) = listener.as_mut() else {
            match connect(&pool, &channel).await {
                Ok(reconnected) => {
                    tracing::info!(channel, "listening again");
                    listener = Some(reconnected);
                    pause = Duration::from_millis(50);
                    hub.missed();
                }
                Err(e) => {
                    tracing::warn!(error = %e, channel, retry_in_ms = pause.as_millis() as u64, "cannot LISTEN");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(5));
                }
            }
            continue;
        };
        match active.try_recv().await {
            Ok(Some(notification)) => hub.deliver(notification.payload()),
            // The connection dropped and sqlx re-established it (and its LISTEN).
            Ok(None) => {
                tracing::info!(channel, "listener reconnected");
                hub.missed();
            }
            Err(e) => {
                tracing::warn!(error = %e, channel, "listener connection lost");
                listener = None;
                hub.missed();
            }
        }
    }
}
