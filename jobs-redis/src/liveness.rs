//! Liveness: each worker keeps a connection of its own, named `jobs-live-<random>` with
//! `CLIENT SETNAME`, and records that name in the hash `{<prefix>}:liveness`. Redis forgets a
//! client the moment its socket closes, which the kernel does when the process dies, so a
//! recorded worker whose name `CLIENT LIST` no longer shows is gone.
//!
//! The connection is pinged every second; when it breaks, jobs-core's
//! [`LivenessKeeper::keep`](jobs_core::LivenessKeeper::keep) makes a new one (a new name,
//! recorded again). On a cluster the
//! connection goes to one of the nodes given (the next one after a failure) and `CLIENT LIST`
//! is asked of every node, so a failover moves nothing.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use jobs_core::{liveness, Error, Hold, Liveness};
use redis::aio::MultiplexedConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
use redis::{AsyncConnectionConfig, Client};
use uuid::Uuid;

use crate::connect::Conn;
use crate::RedisBackend;

/// How often the held connection is checked, and how long a check may take.
const CHECK_EVERY: Duration = Duration::from_secs(1);

impl RedisBackend {
    /// Starts holding `worker`'s liveness on a connection of its own; the hold ends when the
    /// returned [`Liveness`] is dropped.
    pub(crate) fn hold(&self, worker: String) -> Liveness {
        let inner = self.inner();
        if inner.subscribers.is_empty() {
            return Liveness::unsupported();
        }
        let (keeper, liveness) = liveness();
        let name = Name {
            clients: inner.subscribers.clone(),
            next: 0,
            conn: inner.conn.clone(),
            key: inner.keys.liveness(),
            worker: worker.clone(),
        };
        tokio::spawn(keeper.keep(worker, name));
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

/// A worker's named connection.
struct Name {
    /// The servers to connect to, each in turn.
    clients: Vec<Client>,
    /// The one to connect to next.
    next: usize,
    /// The backend's connection, for the record in the prefix's hash.
    conn: Conn,
    key: String,
    worker: String,
}

impl Hold for Name {
    type Conn = MultiplexedConnection;

    /// A new connection to the next server, named, its name recorded for the worker.
    async fn take(&mut self) -> Result<MultiplexedConnection, Error> {
        let client = &self.clients[self.next % self.clients.len()];
        self.next += 1;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CHECK_EVERY))
            .set_response_timeout(Some(CHECK_EVERY));
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(Error::backend)?;
        let name = format!("jobs-live-{}", Uuid::new_v4().simple());
        redis::cmd("CLIENT")
            .arg("SETNAME")
            .arg(&name)
            .query_async::<()>(&mut conn)
            .await
            .map_err(Error::backend)?;
        redis::cmd("HSET")
            .arg(&self.key)
            .arg(&self.worker)
            .arg(&name)
            .query_async::<()>(&mut self.conn.clone())
            .await
            .map_err(Error::backend)?;
        Ok(conn)
    }

    async fn broken(conn: &mut MultiplexedConnection) {
        loop {
            tokio::time::sleep(CHECK_EVERY).await;
            if redis::cmd("PING").query_async::<()>(conn).await.is_err() {
                return;
            }
        }
    }
}
