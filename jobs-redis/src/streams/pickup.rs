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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use jobs_core::{later, Error, Failure, FetchParams, KnownJob, LeaseRef, Timestamp};
use redis::{AsyncConnectionConfig, Client, Value};
use tokio::sync::watch;

use crate::backend::Inner;
use crate::deliveries::Recipient;
use crate::record::micros;
use crate::scripts::SCRIPTS;
use crate::streams::fetch::{leased_jobs, read_entries, LeaseOf};
use crate::streams::readers::{Armed, ReadConn};
use crate::streams::reply::bounds;
use crate::streams::token::CallId;
use crate::RedisBackend;

/// The longest a read blocks before it ends and the worker's next fetch starts another.
const LONGEST_BLOCK: Duration = Duration::from_secs(10);

/// How long a connection attempt for a read may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What one read needs: the worker, its queue and the call's lease.
struct Read {
    worker: String,
    queue: String,
    call: CallId,
    /// How many jobs it takes at most.
    count: usize,
    /// The jobs the worker runs (`None`: every job); it sets the others aside.
    known: Option<Vec<KnownJob>>,
    lease_for: Duration,
    /// The worker's clock when the read began, and the moment it did.
    armed_at: (Timestamp, Instant),
    block: Duration,
}

impl RedisBackend {
    /// Starts a blocked read for `p.worker` of `queue` (its fetch found nothing), unless one
    /// is under way, or the worker offers no place, or the store is a cluster, or the queue has
    /// a concurrency or a rate (which only a fetch counts).
    pub(crate) async fn wait_for_jobs(&self, queue: &str, p: &FetchParams) -> Result<(), Error> {
        if p.deliver == 0 || self.is_cluster() {
            return Ok(());
        }
        let readers = &self.inner().readers;
        if readers.is_reading(&p.worker) {
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
                Ok(answer) if answer == "limited" => {
                    readers.keep_idle(conn);
                    return Ok(());
                }
                Ok(_) => break call,
                Err(e) if e.to_string().contains("TAKEN") => continue,
                Err(e) => {
                    readers.keep_idle(conn);
                    return Err(e);
                }
            }
        };
        let read = Read {
            worker: p.worker.clone(),
            queue: queue.to_string(),
            call,
            count: p.deliver,
            known: p.known.clone(),
            lease_for: p.lease_for,
            armed_at: (p.now, Instant::now()),
            block,
        };
        let ending = Arc::new(AtomicBool::new(false));
        let (done, reading) = watch::channel(true);
        let client = conn.id;
        let task = tokio::spawn(read_once(
            self.downgrade(),
            conn,
            read,
            ending.clone(),
            done,
        ));
        readers.arm(
            &p.worker,
            Armed {
                client,
                ending,
                reading,
                task,
            },
        );
        Ok(())
    }

    /// Ends `worker`'s read, if one is under way, and waits until what it took (if anything)
    /// has reached the worker's subscription.
    pub(crate) async fn end_wait(&self, worker: &str) {
        if let Some(read) = self.disarm(worker) {
            self.unblock(read).await;
        }
    }

    /// Ends `worker`'s read in the background, if one is under way: a fetch leased jobs.
    pub(crate) fn end_wait_soon(&self, worker: &str) {
        if let Some(read) = self.disarm(worker) {
            let backend = self.clone();
            tokio::spawn(async move { backend.unblock(read).await });
        }
    }

    /// Takes `worker`'s read out of those under way, if it has one.
    fn disarm(&self, worker: &str) -> Option<Armed> {
        self.inner().readers.disarm(worker)
    }

    /// Unblocks `read` until it has returned and handed over what it took (or its task is
    /// gone): an unblock that comes before the read blocks finds nothing to end, so it is sent
    /// again every few milliseconds until then.
    async fn unblock(&self, mut read: Armed) {
        read.ending.store(true, Ordering::SeqCst);
        while read.reading() {
            let cmd = redis::cmd("CLIENT").arg("UNBLOCK").arg(read.client).clone();
            if let Err(e) = self.query::<i64>(&cmd).await {
                tracing::warn!(error = %e, "could not end a worker's blocked read; it ends by itself");
                let _ = read.reading.wait_for(|reading| !reading).await;
                return;
            }
            // Over once the read says so, or its task ended without saying (the sender gone).
            let ended = read.reading.wait_for(|reading| !reading);
            if tokio::time::timeout(Duration::from_millis(5), ended)
                .await
                .is_ok()
            {
                return;
            }
        }
    }

    /// A connection for a read: one a read left, or a new one.
    async fn read_conn(&self) -> Result<ReadConn, Error> {
        if let Some(conn) = self.inner().readers.take_idle() {
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
/// subscription and says so on `done`, then writes the call's lease over them; or drops the
/// lease when it took none. The connection goes back to the instance's idle ones, unless it
/// failed.
async fn read_once(
    inner: Weak<Inner>,
    mut conn: ReadConn,
    read: Read,
    ending: Arc<AtomicBool>,
    done: watch::Sender<bool>,
) {
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
    let failed = reply.is_err();
    let (started, expires) = read.lease();
    let taken = reply.and_then(|reply| {
        let entries = read_entries(reply)?;
        Ok(bounds(&entries)?.map(|range| (range, entries)))
    });
    let (mut corrupt, mut aside) = (Vec::new(), Vec::new());
    let range = match taken {
        Ok(Some((range, entries))) => {
            match hand_over(inner, &read, entries, started, expires) {
                Ok(missed) => (corrupt, aside) = missed,
                Err(e) => {
                    tracing::warn!(queue = %read.queue, error = %e, "a worker's blocked read took jobs it cannot read; they are rescued when their lease lapses");
                }
            }
            Some(range)
        }
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(queue = %read.queue, error = %e, "a worker's blocked read failed; what it took is rescued when its worker is gone");
            None
        }
    };
    done.send_replace(false);
    let mut adopt = backend.invocation(&SCRIPTS.xadopt, &read.queue, started);
    adopt
        .arg(micros(expires))
        .arg(&read.worker)
        .arg(read.call.to_string());
    if let Some((first, last, n)) = range {
        adopt.arg(first).arg(last).arg(n);
    }
    if let Err(e) = backend.run::<i64>(&adopt).await {
        tracing::warn!(queue = %read.queue, error = %e, "could not write the lease of a blocked read's jobs; they are rescued when their worker is gone");
    }
    backend.let_go_of(corrupt, aside, started).await;
    if !failed {
        backend.inner().readers.keep_idle(conn);
    }
}

impl Read {
    /// When the read's jobs started, by the worker's clock, and until when they are leased.
    fn lease(&self) -> (Timestamp, Timestamp) {
        let (at, instant) = self.armed_at;
        let started = later(at, instant.elapsed());
        (started, later(started, self.lease_for))
    }
}

/// Hands the jobs of a read's `entries`, leased from `started` until `expires`, that the
/// worker runs to its subscription (or back to the store when it has none here); a failure
/// for each that does not decode, and the leases of those the worker does not run.
fn hand_over(
    inner: Arc<Inner>,
    read: &Read,
    entries: Value,
    started: Timestamp,
    expires: Timestamp,
) -> Result<(Vec<Failure>, Vec<LeaseRef>), Error> {
    let lease = LeaseOf {
        call: read.call,
        queue: &read.queue,
        worker: &read.worker,
        started,
        expires,
        counted: usize::MAX,
    };
    let taken = leased_jobs(entries, &lease, read.known.as_deref())?;
    for job in taken.leased {
        Recipient::take(inner.clone(), &read.worker, job);
    }
    Ok((taken.corrupt, taken.aside))
}
