//! Connecting: the single-server and cluster connections, and passwords kept out of errors.
//!
//! A URL that does not parse, names another scheme or a bad port is [`Error::Invalid`]; a
//! server that refuses or does not answer is [`Error::Connect`], at once: the first connection
//! is a single attempt (the connection manager's retries are for reconnecting later).

use jobs_core::Error;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::io::tcp::TcpSettings;
use redis::{AsyncConnectionConfig, Client, Cmd, IntoConnectionInfo, Pipeline, RedisFuture, Value};

use crate::options::Timeouts;

/// A connection to one server or to a cluster: multiplexed, cheap to clone, reconnecting.
#[derive(Clone)]
pub(crate) enum Conn {
    /// One server, through a connection manager that reconnects after errors.
    Single(ConnectionManager),
    /// A cluster, routing each command to the primary of its slot.
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// An open connection, with the clients the wake-up listener subscribes through.
pub(crate) struct Connected {
    pub conn: Conn,
    /// One client per server to subscribe on, tried in turn.
    pub subscribers: Vec<Client>,
}

/// Connects to what `url` names: `redis://…` (or `redis+unix://…`) for one server,
/// `redis+cluster://host:port,host:port` for a cluster. `target` names it in errors.
pub(crate) async fn open(url: &str, target: &str, timeouts: Timeouts) -> Result<Connected, Error> {
    if let Some(nodes) = url.strip_prefix("redis+cluster://") {
        return open_cluster(&cluster_urls(nodes), target, timeouts).await;
    }
    open_client(client(url)?, target, timeouts).await
}

/// A client of the server `url` names, with `TCP_NODELAY`: requests are small and latency
/// matters more than packet count. A URL redis-rs does not take is [`Error::Invalid`].
fn client(url: &str) -> Result<Client, Error> {
    let invalid = |e: redis::RedisError| {
        Error::Invalid(format!("`{}` is not a valid Redis URL: {e}", redact(url)))
    };
    let info = url
        .into_connection_info()
        .map_err(invalid)?
        .set_tcp_settings(nodelay());
    Client::open(info).map_err(invalid)
}

fn nodelay() -> TcpSettings {
    TcpSettings::default().set_nodelay(true)
}

/// Connects through a client that names one server.
pub(crate) async fn open_client(
    client: Client,
    target: &str,
    timeouts: Timeouts,
) -> Result<Connected, Error> {
    // One attempt, so that a server that refuses fails at once rather than after the retries.
    let first = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(timeouts.connect))
        .set_response_timeout(Some(timeouts.response));
    client
        .get_multiplexed_async_connection_with_config(&first)
        .await
        .map_err(|e| connect_error(target, e))?;
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(timeouts.connect))
        .set_response_timeout(Some(timeouts.response))
        .set_number_of_retries(2);
    let manager = ConnectionManager::new_with_config(client.clone(), config)
        .await
        .map_err(|e| connect_error(target, e))?;
    Ok(Connected {
        conn: Conn::Single(manager),
        subscribers: vec![client],
    })
}

/// Connects to a cluster through any of its nodes' URLs.
pub(crate) async fn open_cluster(
    urls: &[String],
    target: &str,
    timeouts: Timeouts,
) -> Result<Connected, Error> {
    if urls.is_empty() {
        return Err(Error::Invalid(format!(
            "`{}` names no cluster node",
            redact(target)
        )));
    }
    let subscribers = urls
        .iter()
        .map(|u| client(u))
        .collect::<Result<Vec<_>, _>>()?;
    let client = ClusterClient::builder(urls.iter().map(String::as_str))
        .connection_timeout(timeouts.connect)
        .response_timeout(timeouts.response)
        .retries(3)
        .tcp_settings(nodelay())
        .build()
        .map_err(|e| {
            Error::Invalid(format!(
                "`{}` is not a valid cluster URL: {e}",
                redact(target)
            ))
        })?;
    let conn = client
        .get_async_connection()
        .await
        .map_err(|e| connect_error(target, e))?;
    Ok(Connected {
        conn: Conn::Cluster(conn),
        subscribers,
    })
}

/// The node URLs of `redis+cluster://[user:password@]host:port,host:port[/][?options]`, each
/// with the options (redis-rs's own, such as `protocol`).
fn cluster_urls(rest: &str) -> Vec<String> {
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, format!("?{query}")),
        None => (rest, String::new()),
    };
    let rest = rest.split(['/', '#']).next().unwrap_or_default();
    let (userinfo, hosts) = match rest.rsplit_once('@') {
        Some((userinfo, hosts)) => (format!("{userinfo}@"), hosts),
        None => (String::new(), rest),
    };
    hosts
        .split(',')
        .filter(|h| !h.is_empty())
        .map(|host| format!("redis://{userinfo}{host}{query}"))
        .collect()
}

fn connect_error(target: &str, e: redis::RedisError) -> Error {
    Error::Connect {
        target: redact(target),
        source: Box::new(e),
    }
}

/// `url` with its password replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let Some((userinfo, hosts)) = authority.rsplit_once('@') else {
        return url.to_string();
    };
    let user = match userinfo.split_once(':') {
        Some((user, _password)) => format!("{user}:***"),
        None => "***".to_string(),
    };
    format!("{scheme}://{user}@{hosts}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(
            redact("redis://app:s3cret@db:6379/2"),
            "redis://app:***@db:6379/2"
        );
        assert_eq!(redact("redis://:s3cret@db"), "redis://:***@db");
        assert_eq!(redact("redis://token@db"), "redis://***@db");
        assert_eq!(redact("redis://db:6379"), "redis://db:6379");
        assert_eq!(redact("not a url"), "not a url");
    }

    #[test]
    fn cluster_urls_name_each_node() {
        assert_eq!(
            cluster_urls(":pw@node-a:7000,node-b:7001/"),
            vec!["redis://:pw@node-a:7000", "redis://:pw@node-b:7001"]
        );
        assert_eq!(cluster_urls("h:1"), vec!["redis://h:1"]);
        assert_eq!(
            cluster_urls("a:1,b:2/?protocol=resp3"),
            vec!["redis://a:1?protocol=resp3", "redis://b:2?protocol=resp3"]
        );
        assert!(cluster_urls("").is_empty());
    }
}
