//! Checks of the worker on top of the backend: outcomes and their recorded errors, leases,
//! start and shutdown, what the worker records about itself, and its maintenance timers.

pub(super) mod events;
pub(super) mod flow;
pub(super) mod leases;
pub(super) mod lifecycle;
pub(super) mod maintenance;
pub(super) mod outcomes;
pub(super) mod prefetch;
pub(super) mod versions;
pub(super) mod workflow;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::JobEvent;

/// A hook that counts the events it sees, and the count.
fn counter() -> (Arc<AtomicU32>, impl Fn(&JobEvent) + Send + Sync + 'static) {
    let count = Arc::new(AtomicU32::new(0));
    let seen = count.clone();
    (count, move |_: &JobEvent| {
        seen.fetch_add(1, Ordering::SeqCst);
    })
}

/// How many events a [`counter`] saw.
fn seen(count: &AtomicU32) -> u32 {
    count.load(Ordering::SeqCst)
}
