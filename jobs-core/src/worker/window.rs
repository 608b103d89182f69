//! The worker's window of leased jobs: a slot for each job it holds, running or leased ahead
//! (prefetched), and how many it leases ahead.
//!
//! A prefetch the worker sets stays as set. Without one, the window adapts to how fast the
//! handlers go against how long a fetch takes. It starts with as many jobs ahead as the
//! concurrency:
//! - It doubles, up to the most one fetch asks for (the store's
//!   [`max_fetch`](crate::Backend::max_fetch)), when a fetch that got all it asked for, as the
//!   one before it did, comes back to idle handlers: they ran every job leased ahead before the
//!   fetch returned, so more leased ahead hides the fetch's round trip. (The first fetch of a
//!   backlog finds them idle too, for want of jobs: it does not count.)
//! - It shrinks by a quarter, down to the concurrency again, when a fetch comes back to more
//!   than a quarter of the jobs ahead still waiting for their turn: the handlers are slower than
//!   the fetches, and leasing more ahead would only keep those jobs from other workers.
//! - It goes back to the concurrency when a fetch comes back short of what it asked for: the
//!   backlog is drained (or limits hold it back), and the next one may be of slow jobs, which a
//!   wide window would keep from other workers.
//!
//! So a prefetched job waits for its turn about one fetch's round trip at most, however many
//! jobs are leased ahead: a higher-priority job enqueued meanwhile starts after them.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The slots of the jobs a worker holds, and how many of them are for jobs leased ahead.
pub(super) struct Window {
    slots: Arc<Semaphore>,
    ahead: usize,
    min: usize,
    max: usize,
    /// The last fetch got all it asked for: a backlog is being drained.
    full: bool,
    /// Slots a shrink still has to give up, as they free.
    owed: usize,
    /// The most jobs one fetch asks for.
    max_fetch: usize,
}

impl Window {
    /// A window for `concurrency` running jobs and `prefetch` more leased ahead, whose fetches
    /// ask for `max_fetch` jobs at most; adapting when `prefetch` is `None`, up to `max_fetch`
    /// ahead.
    pub(super) fn new(concurrency: usize, prefetch: Option<usize>, max_fetch: usize) -> Window {
        let max_fetch = max_fetch.max(1);
        let (ahead, max) = match prefetch {
            Some(n) => (n, n),
            None => (concurrency, max_fetch.max(concurrency)),
        };
        Window {
            slots: Arc::new(Semaphore::new(concurrency + ahead)),
            ahead,
            min: ahead,
            max,
            full: false,
            owed: 0,
            max_fetch,
        }
    }

    /// How many slots a fetch waits for while jobs leased ahead keep the handlers busy: half
    /// of those ahead, so that fetches come in batches rather than one per finished job, and
    /// no more than one fetch asks for.
    pub(super) fn batch(&self) -> usize {
        (self.ahead / 2).clamp(1, self.max_fetch)
    }

    /// Gives up the slots a shrink owes as they free, waits for a batch of free slots, then
    /// takes every other free one (up to a fetch's worth).
    pub(super) async fn take(&mut self) -> Vec<OwnedSemaphorePermit> {
        while self.owed > 0 {
            let permit = self.slots.clone().acquire_owned().await;
            permit.expect("never closed").forget();
            self.owed -= 1;
        }
        let at_least = self.batch();
        let mut permits = Vec::with_capacity(at_least);
        while permits.len() < at_least {
            let permit = self.slots.clone().acquire_owned().await;
            permits.push(permit.expect("never closed"));
        }
        self.take_free(&mut permits);
        permits
    }

    /// A free slot, if there is one.
    pub(super) fn try_slot(&self) -> Option<OwnedSemaphorePermit> {
        self.slots.clone().try_acquire_owned().ok()
    }

    /// Adds the free slots to `permits`, up to a fetch's worth.
    pub(super) fn take_free(&self, permits: &mut Vec<OwnedSemaphorePermit>) {
        let room = self.max_fetch.saturating_sub(permits.len());
        permits.reserve(self.slots.available_permits().min(room));
        while permits.len() < self.max_fetch {
            match self.slots.clone().try_acquire_owned() {
                Ok(permit) => permits.push(permit),
                Err(_) => break,
            }
        }
    }

    /// A fetch that asked for `asked` jobs came back with `got`, to `waiting` jobs leased
    /// earlier still waiting for their turn and, when `idle`, a handler free with none to run.
    /// Resizes an adapting window (see the module's notes). A shrink gives up the free slots at
    /// once, and the rest as they free, before the next fetch.
    pub(super) fn fetched(&mut self, asked: usize, got: usize, waiting: usize, idle: bool) {
        let full = got == asked && got > 0;
        let backlog = std::mem::replace(&mut self.full, full);
        if !full {
            self.shrink_to(self.min);
        } else if idle && backlog && self.ahead < self.max {
            let grown = (self.ahead * 2).max(1).min(self.max);
            let more = grown - self.ahead;
            let forgiven = more.min(self.owed);
            self.owed -= forgiven;
            self.slots.add_permits(more - forgiven);
            self.ahead = grown;
        } else if waiting > self.ahead / 4 {
            self.shrink_to(self.ahead - self.ahead / 4);
        }
    }

    /// Leases `ahead` jobs ahead from now on (not fewer than the least): gives up the free
    /// slots beyond at once, and owes the rest.
    fn shrink_to(&mut self, ahead: usize) {
        let ahead = ahead.max(self.min);
        if let Some(fewer) = self.ahead.checked_sub(ahead) {
            self.owed += fewer - self.slots.forget_permits(fewer);
            self.ahead = ahead;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` full fetches of a backlog, each back to idle handlers.
    fn full_fetches(window: &mut Window, n: usize) {
        for _ in 0..n {
            window.fetched(8, 8, 0, true);
        }
    }

    #[test]
    fn a_set_prefetch_stays_as_set() {
        let mut window = Window::new(16, Some(4), 256);
        window.fetched(20, 20, 0, true);
        assert_eq!(window.ahead, 4);
        window.fetched(20, 20, 4, false);
        assert_eq!(window.ahead, 4);
        assert_eq!(window.slots.available_permits(), 20);
    }

    #[tokio::test]
    async fn a_fetch_asks_for_the_stores_most_at_once() {
        let mut wide = Window::new(16, None, 1024);
        full_fetches(&mut wide, 8);
        assert_eq!(wide.ahead, 1024);
        assert_eq!(wide.take().await.len(), 1024, "of 1,040 free slots");
        let mut set = Window::new(16, Some(2000), 256);
        assert_eq!(set.take().await.len(), 256, "of 2,016 free slots");
    }

    #[tokio::test]
    async fn grows_while_full_fetches_find_the_handlers_idle() {
        let mut window = Window::new(16, None, 256);
        assert_eq!(window.ahead, 16);
        let first = window.take().await;
        assert_eq!(first.len(), 32, "every slot of 16 running and 16 ahead");
        window.fetched(32, 32, 0, true);
        assert_eq!(
            window.ahead, 16,
            "the first fetch of a backlog finds the handlers idle"
        );
        window.fetched(32, 32, 0, true);
        assert_eq!(window.ahead, 32);
        assert_eq!(
            window.slots.available_permits(),
            16,
            "the new slots are free"
        );
        window.fetched(32, 32, 0, false);
        assert_eq!(window.ahead, 32, "busy handlers: enough ahead");
        full_fetches(&mut window, 10);
        assert_eq!(window.ahead, 256, "up to the most one fetch asks for");
        assert_eq!(window.batch(), 128);
        window.fetched(128, 20, 0, true);
        assert_eq!(
            window.ahead, 16,
            "a fetch short of what it asked: the backlog is drained"
        );
        window.fetched(32, 32, 0, true);
        assert_eq!(window.ahead, 16, "the first full fetch after a short one");
        window.fetched(32, 32, 0, true);
        assert_eq!(window.ahead, 32);
    }

    #[tokio::test]
    async fn shrinks_to_the_concurrency_while_jobs_ahead_wait() {
        let mut window = Window::new(16, None, 256);
        full_fetches(&mut window, 5);
        assert_eq!(window.ahead, 256);
        window.fetched(128, 128, 64, false);
        assert_eq!(window.ahead, 256, "a quarter waiting: kept");
        window.fetched(128, 128, 65, false);
        assert_eq!(window.ahead, 192);
        assert_eq!(
            window.slots.available_permits(),
            16 + 192,
            "gave up free slots"
        );
        let mut held = window.take().await;
        assert_eq!(held.len(), 16 + 192);
        window.fetched(208, 208, 100, false);
        assert_eq!(window.ahead, 144);
        assert_eq!(window.owed, 48, "every slot in use: given up as they free");
        held.truncate(60);
        let more = window.take().await;
        assert_eq!(
            (window.owed, more.len()),
            (0, 100),
            "148 freed: 48 given up, 100 taken"
        );
        drop((held, more));
        for _ in 0..20 {
            window.fetched(8, 8, 100, false);
        }
        assert_eq!(window.ahead, 16, "never below the concurrency");
        assert_eq!(window.slots.available_permits(), 32);
    }
}
