//! The state of a backend instance's blocked reads (see [`pickup`](super::pickup)): each
//! worker's read under way, and the connections reads left for the next ones. Apart from the
//! reads themselves, so that the backend holds it without depending on how reads run.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use redis::aio::MultiplexedConnection;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The blocked reads of a backend instance's workers, and the connections they use.
#[derive(Default)]
pub(crate) struct Readers {
    /// Connections that a read used and left, with their client ids.
    idle: Mutex<Vec<ReadConn>>,
    /// Each worker's read, by worker.
    armed: Mutex<HashMap<String, Armed>>,
}

/// A connection kept for blocked reads, and its id on the server (for `CLIENT UNBLOCK`).
pub(crate) struct ReadConn {
    pub conn: MultiplexedConnection,
    pub id: i64,
}

/// A worker's read under way.
pub(crate) struct Armed {
    /// The id of its connection on the server.
    pub client: i64,
    /// Set when the read is to end without blocking again.
    pub ending: Arc<AtomicBool>,
    /// True until the read has returned and handed what it took to the worker's subscription
    /// (it then writes their lease, while the worker may start another read).
    pub reading: watch::Receiver<bool>,
    pub task: JoinHandle<()>,
}

impl Armed {
    /// Whether the read has not returned yet.
    pub(crate) fn reading(&self) -> bool {
        *self.reading.borrow()
    }
}

impl Readers {
    /// Whether `worker` has a read that has not returned yet.
    pub(crate) fn is_reading(&self, worker: &str) -> bool {
        self.armed
            .lock()
            .expect("readers")
            .get(worker)
            .is_some_and(Armed::reading)
    }

    /// Records `worker`'s new read, in place of one that ended by itself.
    pub(crate) fn arm(&self, worker: &str, read: Armed) {
        self.armed
            .lock()
            .expect("readers")
            .insert(worker.to_string(), read);
    }

    /// Takes `worker`'s read out of those under way, if it has one.
    pub(crate) fn disarm(&self, worker: &str) -> Option<Armed> {
        self.armed.lock().expect("readers").remove(worker)
    }

    /// A connection a read left, if any.
    pub(crate) fn take_idle(&self) -> Option<ReadConn> {
        self.idle.lock().expect("readers").pop()
    }

    /// Keeps `conn` for the next read.
    pub(crate) fn keep_idle(&self, conn: ReadConn) {
        self.idle.lock().expect("readers").push(conn);
    }
}

/// A backend instance that goes ends its workers' reads: their connections close, and Redis
/// drops the blocked reads with them.
impl Drop for Readers {
    fn drop(&mut self) {
        let armed = self.armed.get_mut().unwrap_or_else(|e| e.into_inner());
        for (_, read) in armed.drain() {
            read.task.abort();
        }
    }
}
