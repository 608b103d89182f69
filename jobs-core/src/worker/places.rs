//! The places under queues' concurrency limits that the worker's promoted jobs hold, told to
//! the store as they change (see [`Backend::hold_places`](crate::Backend::hold_places)).
//!
//! A reserved job that an ended job handed its place to (see [`handoff`](super::handoff))
//! takes that place over; the store counts it as one of the worker's places, one number per
//! queue, not as a write to the job. As long as the worker's reserved jobs hand places on to
//! one another, the number stays the same and nothing is written. It rises when a job counted
//! by its lease hands its place to a reserved one, and falls when a promoted job ends with no
//! reserved job to take its place.
//!
//! The sink tells the store before each batch of outcomes (so a rise lands before the outcome
//! of the ended job that handed its place on), and the fetch loop before each fetch (so a place
//! given up is free for the worker's own fetch). One at a time: each reads the count under the
//! lock it writes under, so the last write is never older than the last read.
//!
//! The store drops a worker's places when its heartbeat expires (a worker that died unseen
//! leaves none behind for good), so each heartbeat tells them again, changed or not.

use std::collections::HashMap;

use tokio::sync::Mutex;

use crate::any::AnyBackend;
use crate::backend::{Backend as _, PlacesParams};

use super::leases::Leases;
use super::retry::with_retries;

/// The places the store last heard of, per queue.
#[derive(Default)]
pub(crate) struct Places {
    told: Mutex<HashMap<String, u32>>,
}

impl Places {
    /// Tells the store of every queue whose places changed since it last heard (every queue
    /// with places, when `again`): as many as the worker's promoted jobs hold now. Should a
    /// write fail, the limit counts the places it heard of before until the next one (too few
    /// only while a rise is not written: one of the jobs that handed its place on may then run
    /// beside one job too many).
    pub(super) async fn tell(
        &self,
        backend: &AnyBackend,
        leases: &Leases,
        worker: &str,
        again: bool,
    ) {
        let mut told = self.told.lock().await;
        let held = leases.places();
        if told.is_empty() && held.is_empty() {
            return;
        }
        let mut changed: Vec<(String, u32)> = held
            .iter()
            .filter(|(queue, n)| again || told.get(*queue) != Some(n))
            .map(|(queue, n)| (queue.clone(), *n))
            .collect();
        changed.extend(
            told.keys()
                .filter(|queue| !held.contains_key(*queue))
                .map(|queue| (queue.clone(), 0)),
        );
        for (queue, places) in changed {
            let params = PlacesParams {
                worker: worker.to_owned(),
                queue: queue.clone(),
                places,
            };
            match with_retries(|| backend.hold_places(params.clone())).await {
                Ok(()) if places == 0 => {
                    told.remove(&queue);
                }
                Ok(()) => {
                    told.insert(queue, places);
                }
                Err(e) => {
                    tracing::error!(error = %e, queue, places, "could not count the places of promoted jobs against their limit")
                }
            }
        }
    }
}
