//! The run gate: lets leased jobs start, at most `concurrency` at once, in the job model's order
//! (priority, then run_at, then FIFO) however the tasks holding them happen to be scheduled.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::model::JobRecord;
use crate::order::RunOrder;

/// Hands out run permits to admitted jobs, lowest order first.
pub(crate) struct RunGate {
    state: Mutex<State>,
}

struct State {
    free: usize,
    waiting: BTreeMap<RunOrder, oneshot::Sender<RunPermit>>,
}

/// The right to run one job; frees its place when dropped.
pub(crate) struct RunPermit {
    gate: Arc<RunGate>,
}

impl Drop for RunPermit {
    fn drop(&mut self) {
        let mut state = self.gate.state();
        state.free += 1;
        self.gate.pump(&mut state);
    }
}

impl RunGate {
    pub(super) fn new(concurrency: usize) -> Arc<Self> {
        Arc::new(RunGate {
            state: Mutex::new(State {
                free: concurrency,
                waiting: BTreeMap::new(),
            }),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a fetched batch; each receiver gets its permit in turn. The whole batch is queued
    /// before any permit is handed out, so the batch's own order does not matter.
    pub(super) fn admit<'a>(
        self: &Arc<Self>,
        jobs: impl IntoIterator<Item = &'a JobRecord>,
    ) -> Vec<oneshot::Receiver<RunPermit>> {
        let jobs = jobs.into_iter();
        // A batch is at most a fetch's: its bound sizes the vector once.
        let mut receivers = Vec::with_capacity(jobs.size_hint().1.unwrap_or(0));
        let mut state = self.state();
        for r in jobs {
            let (tx, rx) = oneshot::channel();
            state.waiting.insert(RunOrder::of(r), tx);
            receivers.push(rx);
        }
        self.pump(&mut state);
        receivers
    }

    /// How many admitted jobs wait for their turn, and whether a place is free (no job to run
    /// in it).
    pub(super) fn backlog(&self) -> (usize, bool) {
        let state = self.state();
        (state.waiting.len(), state.free > 0)
    }

    /// How many jobs could start at once: the free places, none while jobs wait for one.
    pub(super) fn open_places(&self) -> usize {
        let state = self.state();
        if state.waiting.is_empty() {
            state.free
        } else {
            0
        }
    }

    fn pump(self: &Arc<Self>, state: &mut State) {
        while state.free > 0 {
            let Some((_, tx)) = state.waiting.pop_first() else {
                return;
            };
            state.free -= 1;
            if let Err(permit) = tx.send(RunPermit { gate: self.clone() }) {
                // Its job stopped waiting (shutdown): the place stays free.
                std::mem::forget(permit);
                state.free += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::record;

    #[test]
    fn permits_follow_priority_not_arrival() {
        let gate = RunGate::new(1);
        let (low, high) = (record(10), record(0));
        let mut rx = gate.admit([&low, &high]);
        let mut low_rx = rx.remove(0);
        let mut high_rx = rx.remove(0);
        let permit = high_rx.try_recv().expect("the urgent job runs first");
        assert!(low_rx.try_recv().is_err(), "one at a time");
        drop(permit);
        assert!(low_rx.try_recv().is_ok(), "then the routine one");
    }

    #[test]
    fn abandoned_turns_free_their_place() {
        let gate = RunGate::new(1);
        let (a, b, c) = (record(1), record(2), record(3));
        let mut rx = gate.admit([&a, &b, &c]);
        let first = rx.remove(0).try_recv().expect("a runs");
        drop(rx.remove(0)); // b stopped waiting
        drop(first);
        assert!(rx.remove(0).try_recv().is_ok(), "c runs in b's place");
    }
}
