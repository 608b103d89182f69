//! Liveness: each worker keeps a connection of its own, named `jobs-live-<random>` with
//! `CLIENT SETNAME`, and records that name in the hash `{<prefix>}:liveness`. Redis forgets a
//! client the moment its socket closes, which the kernel does when the process dies, so a
//! recorded worker whose name `CLIENT LIST` no longer shows is gone.
//!
//! The holding task pings every second and, when the connection breaks, makes a new one (a
//! new name, recorded again), retrying with a backoff of up to a second. On a cluster the
//! connection goes to one of the nodes given (the next one after a failure) and `CLIENT LIST`
//! is asked of every node, so a failover moves nothing.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use jobs_core::{liveness, Error, Liveness, LivenessKeeper};
use redis::aio::MultiplexedConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
use redis::{AsyncConnectionConfig, Client};
use uuid::Uuid;

use crate::connect::Conn;
use crate::RedisBackend;

/// How often the held connection is checked, and how long a check may take.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// The longest pause between attempts to make the connection again.
const MAX_PAUSE: Duration = Duration::from_secs(1);

impl RedisBackend {
    /// Starts holding `worker`'s liveness on a connection of its own; the hold ends when the
    /// returned [`Liveness`] is dropped.
    pub(crate) fn hold(&self, worker: String) -> Liveness {
        let inner = self.inner();
        if inner.subscribers.is_empty() {
            return Liveness::unsupported();
        }
        let (keeper, liveness) = liveness();
        let holder = Holder {
            clients: inner.subscribers.clone(),
            conn: inner.conn.clone(),
            key: inner.keys.liveness(),
            worker,
        };
        tokio::spawn(holder.keep(keeper));
        liveness
    }

    /// The recorded workers whose connection Redis no longer lists.
    pub(crate) async fn gone(&self) -> Result<Vec<String>, Error> {
        let inner = self.inner();
        let recorded: HashMap<String, String> = self
            .query(redis::cmd("HGETALL").arg(inner.keys.liveness()))
            .await?;
        if recorded.is_empty() {
            return Ok(Vec::new());
        }
        // After the hash: a worker recorded in it had named its connection first.
        let mut list = redis::cmd("CLIENT");
        list.arg("LIST").arg("TYPE").arg("normal");
        let lists: Vec<String> = match inner.conn.clone() {
            Conn::Single(_) => vec![self.query(&list).await?],
            Conn::Cluster(mut cluster) => {
                let every = RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllNodes, None));
                let answers = cluster
                    .route_command(list, every)
                    .await
                    .map_err(Error::backend)?;
                let by_node: HashMap<String, String> =
                    redis::from_redis_value(answers).map_err(Error::backend)?;
                by_node.into_values().collect()
            }
        };
        let named: HashSet<&str> = lists
            .iter()
            .flat_map(|list| list.lines())
            .filter_map(|line| line.split(' ').find_map(|f| f.strip_prefix("name=")))
            .collect();
        let mut gone: Vec<String> = recorded
            .into_iter()
            .filter(|(_, name)| !named.contains(name.as_str()))
            .map(|(worker, _)| worker)
            .collect();
        gone.sort_unstable();
        Ok(gone)
    }
}

/// What holds one worker's liveness.
struct Holder {
    /// The servers to connect to, tried in turn.
    clients: Vec<Client>,
    /// The backend's connection, for the record in the prefix's hash.
    conn: Conn,
    key: String,
    worker: String,
}

impl Holder {
    /// Holds a named connection until the worker lets go, making it again whenever it breaks.
    async fn keep(self, keeper: LivenessKeeper) {
        let worker = &self.worker;
        let mut pause = Duration::from_millis(50);
        for attempt in 0.. {
            let client = &self.clients[attempt % self.clients.len()];
            let taken = tokio::select! {
                _ = keeper.released() => return,
                taken = self.take(client) => taken,
            };
            match taken {
                Ok(mut conn) => {
                    keeper.held();
                    pause = Duration::from_millis(50);
                    tokio::select! {
                        // Dropping the connection closes it, and Redis forgets the client.
                        _ = keeper.released() => return,
                        _ = broken(&mut conn) => {}
                    }
                    keeper.lost();
                    tracing::warn!(
                        worker,
                        "lost the worker's liveness connection; making it again"
                    );
                }
                Err(e) => {
                    tracing::debug!(worker, error = %e, "could not hold the worker's liveness")
                }
            }
            tokio::select! {
                _ = keeper.released() => return,
                _ = tokio::time::sleep(pause) => {}
            }
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }

    /// A new connection to `client`'s server, named, its name recorded for the worker.
    async fn take(&self, client: &Client) -> Result<MultiplexedConnection, redis::RedisError> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CHECK_EVERY))
            .set_response_timeout(Some(CHECK_EVERY));
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        let name = format!("jobs-live-{}", Uuid::new_v4().simple());
        redis::cmd("CLIENT")
            .arg("SETNAME")
            .arg(&name)
            .query_async::<()>(&mut conn)
            .await?;
        redis::cmd("HSET")
            .arg(&self.key)
            .arg(&self.worker)
            .arg(&name)
            .query_async::<()>(&mut self.conn.clone())
            .await?;
        Ok(conn)
    }
}

/// Resolves when `conn` stops answering.
async fn broken(conn: &mut MultiplexedConnection) {
    loop {
        tokio::time::sleep(CHECK_EVERY).await;
        if redis::cmd("PING").query_async::<()>(conn).await.is_err() {
            return;
        }
    }
}
