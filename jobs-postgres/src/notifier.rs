//! Wake-ups sent after a commit, coalesced: for enqueues that commit by themselves (through the
//! backend or a pool) while others of the same store are under way in this process, and for
//! transactions that make ready jobs without notifying (an
//! [`EnqueueTransaction`](crate::EnqueueTransaction), a handler's completion transaction: see
//! [`after_commit`]).
//!
//! A `pg_notify` inside an enqueue's transaction takes Postgres' notification lock at commit and
//! holds it through the WAL flush, so concurrent enqueues that notify commit one after another
//! instead of sharing flushes (pgbench here, 8 clients of one-row inserts: 19,000 commits/s
//! without the notification, 6,800 with it). So an enqueue that starts while none of its store
//! is under way in this process notifies within its statement (alone, it waits on no one, and
//! its signal costs no statement of its own), while one that starts alongside others leaves the
//! signal to a task, handed over when the enqueue ends (after its commit, or as it fails or is
//! dropped: a needless signal only costs an idle worker a fetch). The task notifies at once when
//! idle and otherwise gathers what arrives within [`WINDOW`] into one statement. Should its
//! statement fail, or the process stop first, workers find the jobs at their next poll.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;

/// After a notification, how long the next one gathers queues before it goes out.
const WINDOW: Duration = Duration::from_millis(1);

/// How long a notification may take before the task gives it up.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The statement that sends the notifications.
const NOTIFY: &str = include_str!("sql/notify.sql");

/// A store: its pool (by the address of the connect options that every clone of the pool
/// shares, kept alive by its entry so that no other pool can take the address meanwhile) and
/// its channel.
type Key = (usize, String);

/// The wake-up state of one store.
struct Store {
    /// Pins the address in the key.
    _options: Arc<PgConnectOptions>,
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

/// The key and the state of the store of `pool` and `channel`, made if there is none.
fn entry<'a>(
    all: &'a mut HashMap<Key, Store>,
    pool: &PgPool,
    channel: &str,
) -> (Key, &'a mut Store) {
    let options = pool.connect_options();
    let key = (Arc::as_ptr(&options) as usize, channel.to_owned());
    let store = all.entry(key.clone()).or_insert_with(|| Store {
        _options: options,
        running: 0,
        queues: BTreeSet::new(),
        sending: false,
    });
    (key, store)
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
    /// The queues the enqueue makes ready jobs in.
    queues: &'p [&'p str],
}

impl<'p> Turn<'p> {
    /// Starts an enqueue through `pool` of ready jobs in `queues`, into the store whose channel
    /// is `channel`.
    pub(crate) fn start(pool: &'p PgPool, channel: &str, queues: &'p [&'p str]) -> Self {
        let mut all = stores();
        let (key, store) = entry(&mut all, pool, channel);
        store.running += 1;
        let alone = store.running == 1;
        Turn {
            pool,
            key,
            alone,
            queues,
        }
    }

    /// Whether the enqueue notifies within its statement: it started alone.
    pub(crate) fn in_statement(&self) -> bool {
        self.alone
    }

    /// The enqueue's job went straight to an idle worker: there is no queue to wake.
    pub(crate) fn delivered(&mut self) {
        self.queues = &[];
    }
}

/// The enqueue is over: unless its statement notified, its queues go to the store's task.
impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut all = stores();
        let Some(store) = all.get_mut(&self.key) else {
            return;
        };
        store.running -= 1;
        let start = if self.alone {
            None
        } else {
            hand_over(store, &self.key, self.queues.iter().map(|q| q.to_string()))
        };
        release(&mut all, &self.key);
        drop(all);
        spawn(self.pool, start);
    }
}

/// Wakes the workers of `queues` after a transaction that made ready jobs there committed
/// without notifying (an [`EnqueueTransaction`](crate::EnqueueTransaction), a handler's
/// completion transaction): through the store's task, at once when it is idle. Should the
/// commit's reply be lost (it committed, but the caller saw an error), no one calls this, and
/// the workers find the jobs at their next poll.
pub(crate) fn after_commit(pool: &PgPool, channel: &str, queues: Vec<String>) {
    if queues.is_empty() {
        return;
    }
    let mut all = stores();
    let (key, store) = entry(&mut all, pool, channel);
    let start = hand_over(store, &key, queues);
    drop(all);
    spawn(pool, start);
}

/// Adds `queues` to what `store` (at `key`) sends; the sender to start, if none is sending.
fn hand_over(
    store: &mut Store,
    key: &Key,
    queues: impl IntoIterator<Item = String>,
) -> Option<Sender> {
    let before = store.queues.len();
    store.queues.extend(queues);
    if store.sending || store.queues.len() == before {
        return None;
    }
    store.sending = true;
    Some(Sender(Some(key.clone())))
}

/// Starts `sender`'s task on the current runtime. Called without the stores' lock: a task
/// dropped at once (its runtime shutting down) takes it in its own drop.
fn spawn(pool: &PgPool, sender: Option<Sender>) {
    if let Some(sender) = sender {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(send(pool.clone(), sender));
        }
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
        let sending = sqlx::query(NOTIFY)
            .bind(&key.1)
            .bind(&queues)
            .execute(&pool);
        match tokio::time::timeout(TIMEOUT, sending).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %e, ?queues, "could not wake workers; they will poll")
            }
            Err(_) => tracing::warn!(?queues, "waking workers timed out; they will poll"),
        }
        tokio::time::sleep(WINDOW).await;
    }
}

/// The store a task sends for. Should the task be dropped before it is done (its runtime shut
/// down, or none to spawn it on), the store is given up, so that the next signal starts a new
/// task; what it held is left to the workers' polls.
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

#[cfg(test)]
mod tests {
    use sqlx::postgres::PgListener;

    use super::*;

    /// Deferred signals of enqueues that end together go out in one statement, each queue once;
    /// an enqueue that started alone leaves none to the task (its statement sent its own).
    #[tokio::test(flavor = "current_thread")]
    async fn deferred_signals_are_coalesced() {
        let url = std::env::var("JOBS_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let pool = PgPool::connect(&url).await.expect("the test database");
        let channel = format!("jobs_notifier_test_{}", std::process::id());
        let mut listener = PgListener::connect_with(&pool).await.unwrap();
        listener.listen(&channel).await.unwrap();

        let alone = Turn::start(&pool, &channel, &["a"]);
        assert!(alone.in_statement());
        let b = Turn::start(&pool, &channel, &["q"]);
        let c = Turn::start(&pool, &channel, &["q", "r"]);
        let d = Turn::start(&pool, &channel, &["r"]);
        assert!(!b.in_statement() && !c.in_statement() && !d.in_statement());
        // On this one thread, the task the first of them starts runs once all have ended.
        drop((b, c, d, alone));

        let mut heard = Vec::new();
        while let Ok(n) = tokio::time::timeout(Duration::from_millis(300), listener.recv()).await {
            heard.push(n.unwrap().payload().to_owned());
        }
        heard.sort();
        assert_eq!(heard, ["q", "r"]);
        assert!(
            !stores().keys().any(|(_, c)| *c == channel),
            "an idle store is forgotten"
        );
    }

    /// Queues handed over after a commit go out at once, each once; none, nothing.
    #[tokio::test(flavor = "current_thread")]
    async fn queues_woken_after_a_commit_go_out_each_once() {
        let url = std::env::var("JOBS_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let pool = PgPool::connect(&url).await.expect("the test database");
        let channel = format!("jobs_notifier_after_{}", std::process::id());
        let mut listener = PgListener::connect_with(&pool).await.unwrap();
        listener.listen(&channel).await.unwrap();

        after_commit(&pool, &channel, Vec::new());
        assert!(
            !stores().keys().any(|(_, c)| *c == channel),
            "nothing to wake keeps no store"
        );
        after_commit(&pool, &channel, vec!["b".into(), "a".into(), "b".into()]);
        let mut heard = Vec::new();
        while let Ok(n) = tokio::time::timeout(Duration::from_millis(300), listener.recv()).await {
            heard.push(n.unwrap().payload().to_owned());
        }
        heard.sort();
        assert_eq!(heard, ["a", "b"]);
        assert!(!stores().keys().any(|(_, c)| *c == channel));
    }
}
