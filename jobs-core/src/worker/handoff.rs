//! Handing places under a queue's concurrency limit from ended jobs to reserved ones.
//!
//! Every lease counts against a concurrency limit, so a worker whose jobs fill the limit could
//! lease nothing ahead (no prefetch): each batch waited for its jobs to end and then for a whole
//! fetch. A backend that [`reserves`](crate::Backend::reserves) hands out reserved leases
//! beyond the limit, which no limit counts ([`FetchParams::reserve`](crate::FetchParams)). A
//! reserved job waits here, in fetch order, until one of the worker's jobs of its queue ends:
//! that job hands it its place under the limit at once, in the worker (the reserved job then
//! waits for its turn to run as any other), and it counts among the worker's places (see
//! [`places`](super::places)), which the sink tells the store of before it writes the ended
//! job's outcome, so the limit counts one of the two at every moment. A job that ends while a
//! fetch that reserves is under way keeps its place (its outcome waits) until that fetch is
//! back, and hands it to one of the fetch's reserved jobs.
//!
//! A job handed a place hands it on in turn when it ends, so the reserved jobs waiting in line
//! are served one after another as long as one of the worker's jobs of the queue holds a place:
//! those it held when the fetch was sent, or the fetch's own limited jobs (a worker that holds
//! none reserves at most one more than those, see `fetch_loop`). Should none be left (the last
//! one finished through its completion hook, or lost its lease, or the fetch found no room),
//! the reserved jobs waiting are handed back.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::backend::LeaseRef;
use crate::fast_hash::HashMap;

use super::leases::Leases;

/// What a reserved job waits for: `true` when an ended job handed it its place, `false` when it
/// is to be handed back unstarted.
pub(super) type Handed = oneshot::Receiver<bool>;

/// The reserved jobs waiting for a place, and the ended jobs waiting for a reserved job, per
/// queue.
#[derive(Default)]
pub(crate) struct Handoffs {
    queues: Mutex<HashMap<String, Line>>,
}

#[derive(Default)]
struct Line {
    /// Reserved jobs, in fetch order.
    waiting: VecDeque<Waiting>,
    /// Ended jobs keeping their places for the reserved jobs of the fetch under way.
    donors: VecDeque<Donor>,
    /// A fetch that reserves is under way.
    fetching: bool,
}

struct Waiting {
    lease: LeaseRef,
    start: oneshot::Sender<bool>,
}

struct Donor {
    lease: LeaseRef,
    /// Whether a reserved job of the fetch took its place.
    next: oneshot::Sender<bool>,
}

/// Where an ended job's place goes.
pub(super) enum Hand {
    /// To a reserved job, already told.
    Handed,
    /// To a reserved job of the fetch under way (`true`), or nowhere: the answer comes when it
    /// is back.
    Later(oneshot::Receiver<bool>),
    /// Nowhere: no reserved job waits, and none is coming.
    Nowhere,
}

impl Handoffs {
    fn queues(&self) -> MutexGuard<'_, HashMap<String, Line>> {
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn line<'m>(queues: &'m mut HashMap<String, Line>, queue: &str) -> &'m mut Line {
        if !queues.contains_key(queue) {
            queues.insert(queue.to_string(), Line::default());
        }
        queues.get_mut(queue).expect("just inserted")
    }

    /// A fetch that reserves leases of `queue` starts: jobs that end meanwhile wait for it.
    pub(super) fn fetching(&self, queue: &str) {
        Self::line(&mut self.queues(), queue).fetching = true;
    }

    /// The fetch of `queue` is back with `reserved` leases (held in `leases` already): each is
    /// handed the place of an ended job waiting for one, or queued. The ended jobs left over
    /// keep no place. Returns what each reserved job waits for, in order.
    pub(super) fn arrived(
        &self,
        queue: &str,
        reserved: &[LeaseRef],
        leases: &Leases,
    ) -> Vec<Handed> {
        let mut queues = self.queues();
        let line = Self::line(&mut queues, queue);
        let handed = reserved
            .iter()
            .map(|lease| {
                let (start, handed) = oneshot::channel();
                // A donor that lost its lease meanwhile has no place to hand on.
                while line.donors.front().is_some_and(|d| !leases.holds(d.lease)) {
                    let donor = line.donors.pop_front().expect("just seen");
                    let _ = donor.next.send(false);
                }
                match line.donors.front() {
                    Some(donor) if leases.hand_on(donor.lease, *lease) => {
                        let donor = line.donors.pop_front().expect("just seen");
                        let _ = donor.next.send(true);
                        let _ = start.send(true);
                    }
                    // A later attempt of its job replaced it already: handed back.
                    Some(_) => {
                        let _ = start.send(false);
                    }
                    None => line.waiting.push_back(Waiting {
                        lease: *lease,
                        start,
                    }),
                }
                handed
            })
            .collect();
        line.fetching = false;
        for donor in line.donors.drain(..) {
            let _ = donor.next.send(false);
        }
        // Should every place have ended before the fetch was sent, none is left to take.
        Self::trim_line(line, queue, leases);
        handed
    }

    /// The attempt under `ended`, of `queue`, ended and would hand its place on: to the first
    /// reserved job still waiting, else to one of the fetch under way.
    pub(super) fn hand(&self, queue: &str, ended: LeaseRef, leases: &Leases) -> Hand {
        let mut queues = self.queues();
        let Some(line) = queues.get_mut(queue) else {
            return Hand::Nowhere;
        };
        while let Some(next) = line.waiting.pop_front() {
            // Closed when it stopped waiting meanwhile (its lease was lost), not held when a
            // later attempt of its job replaced it (handed back): the next one.
            if !next.start.is_closed() && leases.hand_on(ended, next.lease) {
                let _ = next.start.send(true);
                return Hand::Handed;
            }
            let _ = next.start.send(false);
        }
        if !line.fetching {
            return Hand::Nowhere;
        }
        let (next, answer) = oneshot::channel();
        line.donors.push_back(Donor { lease: ended, next });
        Hand::Later(answer)
    }

    /// Hands back the reserved jobs of `queue` when none of the worker's jobs (`leases`) holds
    /// a place to hand on. Cheap when none waits: the held jobs are looked at only then.
    pub(super) fn trim(&self, queue: &str, leases: &Leases) {
        if let Some(line) = self.queues().get_mut(queue) {
            Self::trim_line(line, queue, leases);
        }
    }

    fn trim_line(line: &mut Line, queue: &str, leases: &Leases) {
        if !line.waiting.is_empty() && !leases.holds_place(queue) {
            for waiting in line.waiting.drain(..) {
                let _ = waiting.start.send(false);
            }
        }
    }
}
