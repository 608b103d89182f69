//! Job events over pub/sub: published as JSON arrays on `<prefix>:events` (in a cluster a
//! `PUBLISH` reaches the subscribers of every node), heard by the backend's events
//! [`Listener`](crate::listen::Listener).

use std::sync::Arc;

use jobs_core::{encode_events, JobEvent, Publisher};

use crate::connect::Conn;

/// The most bytes of events in one message.
const MESSAGE_BYTES: usize = 64 * 1024;

/// A publisher of events on `channel` through `conn`: one pipeline of `PUBLISH`es per send.
pub(crate) fn publisher(conn: Conn, channel: String) -> Publisher {
    Publisher::new(Arc::new(move |events: Vec<JobEvent>| {
        let mut conn = conn.clone();
        let channel = channel.clone();
        Box::pin(async move {
            let mut pipe = redis::pipe();
            for message in encode_events(&events, MESSAGE_BYTES) {
                pipe.cmd("PUBLISH").arg(&channel).arg(message).ignore();
            }
            if let Err(e) = pipe.query_async::<()>(&mut conn).await {
                tracing::debug!(error = %e, events = events.len(), "could not publish job events");
            }
        })
    }))
}
