//! `api/events`: the job events of the store (see [`Operations::job_events`]) as server-sent
//! events: `event: job` with the event as JSON, and `event: missed` when some may have been
//! missed (read again what matters).

use std::convert::Infallible;

use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use jobs_core::{EventStream, Operations, Received};
use serde::Deserialize;

use crate::problem::Problem;
use crate::Ctx;

/// The query: `queue=`, the only queue whose events are sent (every queue when absent).
#[derive(Debug, Deserialize)]
pub(crate) struct EventsQuery {
    #[serde(default)]
    queue: Option<String>,
}

/// `GET api/events?queue=`.
pub(crate) async fn stream(
    State(ctx): State<Ctx>,
    Query(q): Query<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Problem> {
    let queues: Vec<&str> = q
        .queue
        .as_deref()
        .filter(|q| !q.is_empty())
        .into_iter()
        .collect();
    let events = ctx.backend.job_events(&queues).await?;
    Ok(Sse::new(stream::unfold(events, next)).keep_alive(KeepAlive::default()))
}

/// The next event to send, until the backend is gone.
async fn next(mut events: EventStream) -> Option<(Result<Event, Infallible>, EventStream)> {
    let event = match events.recv().await? {
        Received::Event(event) => Event::default()
            .event("job")
            .json_data(&event)
            .unwrap_or_else(|_| Event::default().event("missed").data("")),
        Received::Missed => Event::default().event("missed").data(""),
    };
    Some((Ok(event), events))
}
