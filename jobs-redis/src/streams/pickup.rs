//! Pickup by blocked reads: a worker whose fetch of one queue found nothing, and that offers
//! idle places ([`FetchParams::deliver`]), waits in an `XREADGROUP … BLOCK` of the queue's
//! stream `x`, on a connection of its own. Redis serves the read in the enqueue's own turn, so
//! the job reaches the worker one hop after its enqueue, with no wake-up and no fetch between.
//!
//! Before it blocks, the read reserves its fetch call's lease (`lua/streams/wait.lua`), so the
//! jobs it takes carry their tokens at once and run while `lua/streams/adopt.lua` writes what
//! the read took, after they were handed to the worker's subscription. A paused queue's
//! stream is held from every read (`lua/streams/pause.lua`). A read ends when it takes jobs,
//! when its time runs out (a third of the lease, at most [`LONGEST_BLOCK`]), when a fetch of
//! the worker leases jobs, or when the worker's deliveries end (`CLIENT UNBLOCK`); the next
//! fetch that finds nothing starts another. Only a single server is read so: a cluster's
//! worker, or one of several queues, waits for wake-ups, as before.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use jobs_core::{later, Error, FetchParams, Timestamp};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, Value};
use tokio::task::JoinHandle;

use crate::backend::Inner;
use crate::deliveries::Recipient;
use crate::record::micros;
use crate::scripts::SCRIPTS;
use crate::streams::fetch::{leased_jobs, read_entries};
use crate::streams::reply::bounds;
use crate::streams::token::CallId;
use crate::RedisBackend;

/// The longest a read blocks before it ends and the worker's next fetch starts another.
const LONGEST_BLOCK: Duration = Duration::from_secs(10);

/// How long a connection attempt for a read may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The blocked reads of a backend instance's workers, and the connections they use.
#[derive(Default)]
pub(crate) struct Readers {
    /// Connections that a read used and left, with their client ids.
    idle: Mutex<Vec<ReadConn>>,
    /// Each worker's read, by worker.
    armed: Mutex<HashMap<String, Armed>>,
}

/// A connection kept for blocked reads, and its id on the server (for `CLIENT UNBLOCK`).
struct ReadConn {
    conn: MultiplexedConnection,
    id: i64,
}

/// A worker's read under way.
struct Armed {
    /// The id of its connection on the server.
    client: i64,
    /// Set when the read is to end without blocking again.
    ending: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

/// What one read needs: the worker, its queue and the call's lease.
struct Read {
    worker: String,
    queue: String,
    call: CallId,
    /// How many jobs it takes at most.
    count: usize,
    lease_for: Duration,
    /// The worker's clock when the read began, and the moment it did.
    armed_at: (Timestamp, Instant),
    block: Duration,
}

impl Drop for Readers {
    fn drop(&mut self) {
        let armed = self.armed.get_mut().unwrap_or_else(|e| e.into_inner());
        for (_, read) in armed.drain() {
            read.task.abort();
        }
    }
}

impl RedisBackend {
    /// Starts a blocked read for `p.worker` of `queue` (its fetch found nothing), unless one
    /// is under way, or the worker offers no place, or the store is a cluster.
    pub(crate) async fn wait_for_jobs(&self, queue: &str, p: &FetchParams) -> Result<(), Error> {
        if p.deliver == 0 || self.is_cluster() {
            return Ok(());
        }
        let readers = &self.inner().readers;
        if readers
            .armed
            .lock()
            .expect("readers")
            .get(&p.worker)
            .is_some_and(|read| !read.task.is_finished())
        {
            return Ok(());
        }
        let conn = self.read_conn().await?;
        let block = (p.lease_for / 3)
            .min(LONGEST_BLOCK)
            .max(Duration::from_millis(1));
        let expires = later(p.now, p.lease_for);
        let call = loop {
            let call = CallId::draw();
            let mut inv = self.invocation(&SCRIPTS.xwait, queue, p.now);
            inv.arg(micros(expires))
                .arg(&p.worker)
                .arg(call.to_string());
            match self.run::<String>(&inv).await {
                Ok(_) => break call,
                Err(e) if e.to_string().contains("TAKEN") => continue,
                Err(e) => {
                    readers.idle.lock().expect("readers").push(conn);
                    return Err(e);
                }
            }
        };
        let read = Read {
            worker: p.worker.clone(),
            queue: queue.to_string(),
            call,
            count: p.deliver,
            lease_for: p.lease_for,
            armed_at: (p.now, Instant::now()),
            block,
        };
        let ending = Arc::new(AtomicBool::new(false));
        let client = conn.id;
        let task = tokio::spawn(read_once(self.downgrade(), conn, read, ending.clone()));
        // A read that ended by itself left its entry behind: this one replaces it.
        readers.armed.lock().expect("readers").insert(
            p.worker.clone(),
            Armed {
                client,
                ending,
                task,
            },
        );
        Ok(())
    }

    /// Ends `worker`'s read, if one is under way, and waits until what it took (if anything)
    /// has reached the worker's subscription.
    pub(crate) async fn end_wait(&self, worker: &str) {
        let armed = self
            .inner()
            .readers
            .armed
            .lock()
            .expect("readers")
            .remove(worker);
        if let Some(read) = armed {
            self.unblock(read).await;
        }
    }

    /// Ends `worker`'s read in the background, if one is under way: a fetch leased jobs.
    pub(crate) fn end_wait_soon(&self, worker: &str) {
        let armed = self
            .inner()
            .readers
            .armed
            .lock()
            .expect("readers")
            .remove(worker);
        if let Some(read) = armed {
            let backend = self.clone();
            tokio::spawn(async move { backend.unblock(read).await });
        }
    }

    /// Unblocks `read` until it has ended: an unblock that comes before the read blocks finds
    /// nothing to end, so it is sent again until the read is over.
    async fn unblock(&self, mut read: Armed) {
        read.ending.store(true, Ordering::SeqCst);
        while !read.task.is_finished() {
            let cmd = redis::cmd("CLIENT").arg("UNBLOCK").arg(read.client).clone();
            if let Err(e) = self.query::<i64>(&cmd).await {
                tracing::warn!(error = %e, "could not end a worker's blocked read; it ends by itself");
                let _ = (&mut read.task).await;
                return;
            }
            let _ = tokio::time::timeout(Duration::from_millis(5), &mut read.task).await;
        }
    }

    /// A connection for a read: one a read left, or a new one.
    async fn read_conn(&self) -> Result<ReadConn, Error> {
        if let Some(conn) = self.inner().readers.idle.lock().expect("readers").pop() {
            return Ok(conn);
        }
        let client: &Client = self
            .inner()
            .subscribers
            .first()
            .ok_or_else(|| Error::backend("no server to read from"))?;
        // No reply timeout: a read blocks for as long as it asks (see `read_once`).
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(None);
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(Error::backend)?;
        let id: i64 = redis::cmd("CLIENT")
            .arg("ID")
            .query_async(&mut conn)
            .await
            .map_err(Error::backend)?;
        Ok(ReadConn { conn, id })
    }
}

/// Runs one read: blocks until jobs come (or the read ends), hands them to the worker's
/// subscription, then writes the call's lease over them; or drops the lease when it took none.
/// The connection goes back to the instance's idle ones, unless it failed.
async fn read_once(inner: Weak<Inner>, mut conn: ReadConn, read: Read, ending: Arc<AtomicBool>) {
    let reply = if ending.load(Ordering::SeqCst) {
        Ok(Value::Nil)
    } else {
        let stream = match inner.upgrade() {
            Some(inner) => format!("{}x", inner.keys.queue(&read.queue)),
            None => return,
        };
        let cmd = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg("g")
            .arg(&read.worker)
            .arg("COUNT")
            .arg(read.count)
            .arg("BLOCK")
            .arg(read.block.as_millis() as u64)
            .arg("STREAMS")
            .arg(&stream)
            .arg(">")
            .clone();
        // Should the server not answer, the read ends a while after it would have.
        let limit = read.block + Duration::from_secs(10);
        match tokio::time::timeout(limit, cmd.query_async::<Value>(&mut conn.conn)).await {
            Ok(reply) => reply.map_err(Error::backend),
            Err(_) => Err(Error::backend("a blocked read got no answer")),
        }
    };
    let Some(inner) = inner.upgrade() else {
        return;
    };
    let backend = RedisBackend::of(inner.clone());
    let ok = reply.is_ok();
    if let Err(e) = take(&backend, inner, &read, reply).await {
        tracing::warn!(queue = %read.queue, error = %e, "a worker's blocked read failed; its jobs are rescued when their lease lapses");
    }
    if ok {
        backend
            .inner()
            .readers
            .idle
            .lock()
            .expect("readers")
            .push(conn);
    }
}

/// Hands what a read took to the worker's subscription and writes the call's lease over it;
/// drops the lease when it took nothing.
async fn take(
    backend: &RedisBackend,
    inner: Arc<Inner>,
    read: &Read,
    reply: Result<Value, Error>,
) -> Result<(), Error> {
    let entries = read_entries(reply?)?;
    let (started, expires) = {
        let (at, instant) = read.armed_at;
        let started = later(at, instant.elapsed());
        (started, later(started, read.lease_for))
    };
    let mut adopt = backend.invocation(&SCRIPTS.xadopt, &read.queue, started);
    adopt
        .arg(micros(expires))
        .arg(&read.worker)
        .arg(read.call.to_string());
    let Some((first, last, n)) = bounds(&entries)? else {
        return backend.run::<i64>(&adopt).await.map(drop);
    };
    adopt.arg(first).arg(last).arg(n);
    let (leased, corrupt) = leased_jobs(
        entries,
        read.call,
        &read.queue,
        &read.worker,
        started,
        expires,
    )?;
    for job in leased {
        Recipient::take(inner.clone(), &read.worker, job);
    }
    backend.run::<i64>(&adopt).await?;
    if !corrupt.is_empty() {
        backend.fail_corrupt(corrupt, started).await;
    }
    Ok(())
}
