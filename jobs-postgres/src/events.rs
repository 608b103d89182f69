//! Job events over NOTIFY: published as JSON arrays (at most [`MESSAGE_BYTES`] each, within
//! PostgreSQL's 8,000-byte payload limit) on the schema's events channel, by one statement per
//! send, outside any job's transaction (so that no commit waits on Postgres' notification lock),
//! and only while some session listens on the channel (asked of `pg_stat_activity` every 200 ms,
//! where each listener names itself after its channel).

use std::sync::Arc;

use jobs_core::{encode_events, JobEvent, ProbeListeners, Publisher, SendEvents};
use sqlx::PgPool;

use crate::listen;

/// The most bytes of events in one notification.
const MESSAGE_BYTES: usize = 7_900;

/// The statement that sends notifications (shared with the wake-ups).
const NOTIFY: &str = include_str!("sql/notify.sql");

/// Whether any session listens on `channel`: its listener names itself after the channel.
const LISTENING: &str =
    "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = left($1, 63))";

/// A publisher of events on `channel` through `pool`, while some session listens.
pub(crate) fn publisher(pool: PgPool, channel: String) -> Publisher {
    let listener = listen::application_name(&channel);
    let probing = pool.clone();
    let probe: ProbeListeners = Arc::new(move || {
        let pool = probing.clone();
        let listener = listener.clone();
        Box::pin(async move {
            // Should the probe fail, publish: a needless event costs less than a lost one.
            sqlx::query_scalar(LISTENING)
                .bind(&listener)
                .fetch_one(&pool)
                .await
                .unwrap_or(true)
        })
    });
    let send: SendEvents = Arc::new(move |events: Vec<JobEvent>| {
        let pool = pool.clone();
        let channel = channel.clone();
        Box::pin(async move {
            let messages = encode_events(&events, MESSAGE_BYTES);
            let sent = sqlx::query(NOTIFY)
                .bind(&channel)
                .bind(&messages)
                .execute(&pool)
                .await;
            if let Err(e) = sent {
                tracing::debug!(error = %e, events = events.len(), "could not publish job events");
            }
        })
    });
    Publisher::new(send, Some(probe))
}
