//! Job events over pub/sub: published as JSON arrays on `<prefix>:events` (in a cluster a
//! `PUBLISH` reaches the subscribers of every node), heard by the backend's events
//! [`Listener`](crate::listen::Listener).

use std::sync::Arc;

use jobs_core::{encode_events, JobEvent, ProbeListeners, Publisher, SendEvents};

use crate::connect::Conn;

/// The most bytes of events in one message.
const MESSAGE_BYTES: usize = 64 * 1024;

/// A publisher of events on `channel` through `conn`: one pipeline of `PUBLISH`es per send,
/// while the channel has subscribers (`PUBSUB NUMSUB`, every 200 ms; on a cluster, where that
/// answers for one node only, always).
pub(crate) fn publisher(conn: Conn, channel: String) -> Publisher {
    let probe: Option<ProbeListeners> = match &conn {
        Conn::Single(_) => {
            let (conn, channel) = (conn.clone(), channel.clone());
            Some(Arc::new(move || {
                let (mut conn, channel) = (conn.clone(), channel.clone());
                Box::pin(async move {
                    let numsub: redis::RedisResult<(String, u64)> = redis::cmd("PUBSUB")
                        .arg("NUMSUB")
                        .arg(&channel)
                        .query_async(&mut conn)
                        .await;
                    // Should the probe fail, publish: a needless event costs less than a lost one.
                    numsub.map_or(true, |(_, n)| n > 0)
                })
            }))
        }
        Conn::Cluster(_) => None,
    };
    let send: SendEvents = Arc::new(move |events: Vec<JobEvent>| {
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
    });
    Publisher::new(send, probe)
}
