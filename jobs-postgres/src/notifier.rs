//! Wake-ups for enqueues that commit by themselves (through the backend or a pool) while others
//! of the same store are under way in this process: sent after the commit, coalesced.
//!
//! A `pg_notify` inside an enqueue's transaction takes Postgres' notification lock at commit and
//! holds it through the WAL flush, so concurrent enqueues that notify commit one after another
//! instead of sharing flushes (pgbench here, 8 clients of one-row inserts: 19,000 commits/s
//! without the notification, 6,800 with it). So an enqueue that starts while none of its store
//! is under way in this process notifies within its statement (alone, it waits on no one, and
//! its signal costs no statement of its own), while one that starts alongside others leaves the
//! signal to a task sent after its commit: the task notifies at once when idle and otherwise
//! gathers what arrives within [`WINDOW`] into one statement. Either way every ready job is
//! followed by a signal sent after its commit, so no wake-up is lost; should the task's
//! statement fail, workers find the jobs at their next poll.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::Duration;

use sqlx::PgPool;

/// After a notification, how long the next one gathers queues before it goes out.
const WINDOW: Duration = Duration::from_millis(1);

/// The statement that sends the notifications.
const NOTIFY: &str = include_str!("sql/notify.sql");

/// A store: its pool (by the address of the connect options that every clone of the pool
/// shares) and its channel.
type Key = (usize, String);

/// The wake-up state of one store.
#[derive(Default)]
struct Store {
    /// Enqueues under way.
    running: usize,
    /// Queues to notify after their jobs' commits.
    queues: BTreeSet<String>,
    /// A task is sending; it takes `queues` with its next statement.
    sending: bool,
}

/// The stores with an enqueue under way or a signal to send.
static STORES: LazyLock<Mutex<HashMap<Key, Store>>> = LazyLock::new(Mutex::default);

fn stores() -> MutexGuard<'static, HashMap<Key, Store>> {
    STORES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Forgets `key`'s store once nothing is under way or waiting there.
fn release(all: &mut HashMap<Key, Store>, key: &Key) {
    if all.get(key).is_some_and(|s| s.running == 0 && !s.sending) {
        all.remove(key);
    }
}

/// One enqueue's part in its store's wake-ups, from before its first statement to its end.
pub(crate) struct Turn<'p> {
    pool: &'p PgPool,
    key: Key,
    alone: bool,
}

impl<'p> Turn<'p> {
    /// Starts an enqueue through `pool` into the store whose channel is `channel`.
    pub fn start(pool: &'p PgPool, channel: &str) -> Self {
        let key = (
            Arc::as_ptr(&pool.connect_options()) as usize,
            channel.to_owned(),
        );
        let mut all = stores();
        let store = all.entry(key.clone()).or_default();
        store.running += 1;
        let alone = store.running == 1;
        Turn { pool, key, alone }
    }

    /// Whether the enqueue notifies within its statement: it started alone.
    pub fn in_statement(&self) -> bool {
        self.alone
    }

    /// Signals `queues`, whose ready jobs have committed, unless the statement did.
    pub fn committed<'q>(&self, queues: impl IntoIterator<Item = &'q str>) {
        if self.alone {
            return;
        }
        let mut all = stores();
        let store = all.get_mut(&self.key).expect("kept while a turn runs");
        store.queues.extend(queues.into_iter().map(str::to_owned));
        if !store.sending && !store.queues.is_empty() {
            store.sending = true;
            tokio::spawn(send(self.pool.clone(), Sender(Some(self.key.clone()))));
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut all = stores();
        if let Some(store) = all.get_mut(&self.key) {
            store.running -= 1;
        }
        release(&mut all, &self.key);
    }
}

/// Sends what is pending on the sender's store, then what gathered meanwhile, a window apart,
/// until nothing is.
async fn send(pool: PgPool, mut sender: Sender) {
    loop {
        let key = sender.0.as_ref().expect("held until the task ends");
        let queues: Vec<String> = {
            let mut all = stores();
            let store = all.get_mut(key).expect("kept while sending");
            if store.queues.is_empty() {
                // Checked and given up under one lock: a later signal starts a new task.
                store.sending = false;
                release(&mut all, key);
                sender.0 = None;
                return;
            }
            std::mem::take(&mut store.queues).into_iter().collect()
        };
        let sent = sqlx::query(NOTIFY)
            .bind(&key.1)
            .bind(&queues)
            .execute(&pool)
            .await;
        if let Err(e) = sent {
            tracing::warn!(error = %e, ?queues, "could not wake workers; they will poll");
        }
        tokio::time::sleep(WINDOW).await;
    }
}

/// The store a task sends for. Should the task be dropped before it is done (its runtime shut
/// down), the store is given up, so that the next signal starts a new task.
struct Sender(Option<Key>);

impl Drop for Sender {
    fn drop(&mut self) {
        if let Some(key) = self.0.take() {
            let mut all = stores();
            if let Some(store) = all.get_mut(&key) {
                store.sending = false;
                store.queues.clear();
            }
            release(&mut all, &key);
        }
    }
}
