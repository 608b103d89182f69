//! Job events over NOTIFY: published as JSON arrays (at most [`MESSAGE_BYTES`] each, within
//! PostgreSQL's 8,000-byte payload limit) on the schema's events channel, by one statement per
//! send, outside any job's transaction (so that no commit waits on Postgres' notification lock).

use std::sync::Arc;

use jobs_core::{encode_events, JobEvent, Publisher};
use sqlx::PgPool;

/// The most bytes of events in one notification.
const MESSAGE_BYTES: usize = 7_900;

/// The statement that sends notifications (shared with the wake-ups).
const NOTIFY: &str = include_str!("sql/notify.sql");

/// A publisher of events on `channel` through `pool`.
pub(crate) fn publisher(pool: PgPool, channel: String) -> Publisher {
    Publisher::new(Arc::new(move |events: Vec<JobEvent>| {
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
    }))
}
