//! Traces across processes (feature `otel`): the enqueuer's OpenTelemetry context travels with
//! the job as a W3C `traceparent`, and the worker restores it on the job's span.
//!
//! An enqueue runs in a producer span, `send <queue>` (`otel.kind = "producer"`, messaging
//! attributes of the OpenTelemetry semantic conventions: `messaging.system = "jobs"`,
//! `messaging.operation.type = "send"`, `messaging.destination.name`), a child of the caller's
//! span; its context is what each job stores (unless the enqueue set its own with
//! [`Enqueue::trace_context`](crate::Enqueue::trace_context)). The worker's span of each
//! attempt, `process <queue>` (`otel.kind = "consumer"`, `messaging.operation.type =
//! "process"`, `messaging.message.id`, the attempt), takes that context as its parent on the
//! first attempt and as a link on retries, so that a retry a day later does not stretch the
//! enqueuer's trace.
//!
//! It works through `tracing`: install `tracing-opentelemetry`'s layer to export the spans.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The carrier key of the W3C trace context.
const TRACEPARENT: &str = "traceparent";

/// The producer span of an enqueue into `queue` of `count` jobs.
pub(crate) fn send_span(queue: &str, count: usize) -> tracing::Span {
    tracing::info_span!(
        "send",
        otel.name = format!("send {queue}"),
        otel.kind = "producer",
        messaging.system = "jobs",
        messaging.operation.type = "send",
        messaging.destination.name = queue,
        messaging.batch.message_count = count,
    )
}

/// The W3C `traceparent` of `span`, when it is part of a sampled or recorded trace.
pub(crate) fn traceparent(span: &tracing::Span) -> Option<String> {
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove(TRACEPARENT)
}

/// Makes the enqueuer's context `traceparent` the parent of `span` (attempt 1) or a link of it
/// (a retry). A context that does not parse is ignored.
pub(crate) fn restore(span: &tracing::Span, traceparent: &str, attempt: u32) {
    let carrier = HashMap::from([(TRACEPARENT.to_string(), traceparent.to_string())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    let remote = cx.span().span_context().clone();
    if !remote.is_valid() {
        return;
    }
    if attempt <= 1 {
        let _ = span.set_parent(cx);
    } else {
        span.add_link(remote);
    }
}
