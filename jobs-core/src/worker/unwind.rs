//! Catching a handler's panic as a value, so a panicking job is a failed attempt and the worker
//! lives on, without a task of its own per job.

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future that resolves to `Err(payload)` if polling `F` panicked.
pub(crate) struct CatchUnwind<F>(pub F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        // The future is dropped right after a panic, never polled again: no broken state is seen.
        match catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

/// The failure message of a handler's panic.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    format!("handler panicked: {}", panic_text(payload))
}

/// The text of a panic's payload.
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-string payload")
}
