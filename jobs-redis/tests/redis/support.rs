//! Test support: backends under fresh prefixes, redis-server processes on free loopback ports
//! (a cluster started once per test binary), and cleanup when the binary exits.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use jobs_core::{
    Backend, Backoff, CompleteParams, Completion, FetchParams, JobId, LeasedJob, NewJob, Timestamp,
};
use jobs_redis::RedisBackend;
use serde_json::value::RawValue;

/// The server the single-node tests use.
pub(crate) fn redis_url() -> String {
    std::env::var("JOBS_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".into())
}

/// A key prefix no other test, process or run uses: `jt-<pid>-<n>`.
pub(crate) fn fresh_prefix() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    cleanup_at_exit();
    format!(
        "jt-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The fixed time the store checks start from.
pub(crate) fn t0() -> Timestamp {
    "2030-01-01T00:00:00Z".parse().unwrap()
}

/// `ms` milliseconds after [`t0`].
pub(crate) fn at(ms: i64) -> Timestamp {
    t0() + chrono::Duration::milliseconds(ms)
}

/// A fetch of up to `limit` jobs of `queues` at `now`, enforcing no queue limits.
pub(crate) fn fetch(queues: &[&str], limit: usize, now: Timestamp) -> FetchParams {
    FetchParams {
        ended: Vec::new(),
        known: None,
        flow: Vec::new(),
        queues: queues.iter().map(|q| q.to_string()).collect(),
        limit,
        worker: "layout".into(),
        lease_for: Duration::from_secs(30),
        now,
        reserve: 0,
        deliver: 0,
    }
}

/// A new job of `queue`, due at `run_at`.
pub(crate) fn job(queue: &str, run_at: Timestamp) -> NewJob {
    NewJob {
        id: JobId::new(),
        name: "layout".into(),
        queue: queue.into(),
        payload: RawValue::from_string("{}".into()).unwrap(),
        version: 1,
        priority: 10,
        run_at,
        max_attempts: 3,
        backoff: Backoff::fixed(Duration::from_secs(1)),
        timeout: None,
        unique_key: None,
        trace_context: None,
        tags: Vec::new(),
        key_limits: None,
        coalesce: None,
        step: None,
    }
}

/// A plain connection to the single server, to look at the keys directly.
pub(crate) async fn raw_connection() -> jobs_redis::redis::aio::MultiplexedConnection {
    jobs_redis::redis::Client::open(redis_url())
        .expect("a Redis URL")
        .get_multiplexed_async_connection()
        .await
        .expect("a Redis server")
}

/// Every member of the sorted set `key` with its score, lowest first.
pub(crate) async fn members_with_scores<S: jobs_redis::redis::FromRedisValue>(
    conn: &mut jobs_redis::redis::aio::MultiplexedConnection,
    key: &str,
) -> Vec<(String, S)> {
    jobs_redis::redis::cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(conn)
        .await
        .expect("ZRANGE")
}

/// The keys under `prefix` whose names match the glob `pattern` (after the prefix), sorted.
pub(crate) async fn keys_like(
    conn: &mut jobs_redis::redis::aio::MultiplexedConnection,
    prefix: &str,
    pattern: &str,
) -> Vec<String> {
    let mut keys: Vec<String> = jobs_redis::redis::cmd("KEYS")
        .arg(format!("{{{prefix}{pattern}"))
        .query_async(conn)
        .await
        .expect("KEYS");
    keys.sort();
    keys
}

/// Completes `jobs` in one call at `now`, each with a `null` result; every completion must be
/// accepted.
pub(crate) async fn complete_all(b: &RedisBackend, jobs: &[LeasedJob], now: Timestamp) {
    let items = jobs
        .iter()
        .map(|j| Completion {
            lease: j.lease(),
            result: RawValue::from_string("null".into()).unwrap(),
        })
        .collect();
    let accepted = b.complete(CompleteParams { items, now }).await.unwrap();
    assert_eq!(accepted, vec![true; jobs.len()]);
}

/// A backend on the single server under a fresh prefix.
pub(crate) async fn single_backend() -> RedisBackend {
    RedisBackend::connect(&redis_url())
        .await
        .expect("a Redis server at JOBS_TEST_REDIS_URL or redis://127.0.0.1:6379")
        .prefix(&fresh_prefix())
        .expect("a valid prefix")
}

/// A backend on the single server under a fresh prefix, in the layout on Redis Streams.
pub(crate) async fn streams_backend() -> RedisBackend {
    RedisBackend::connect(&url_under(&fresh_prefix(), "streams"))
        .await
        .expect("a Redis server at JOBS_TEST_REDIS_URL or redis://127.0.0.1:6379")
}

/// The URL of the single server under `prefix`, in `layout`.
pub(crate) fn url_under(prefix: &str, layout: &str) -> String {
    let base = redis_url();
    let separator = if base.contains('?') { '&' } else { '?' };
    format!("{base}{separator}prefix={prefix}&layout={layout}")
}

/// A backend on the single server under the prefix a process check names, shared by the check
/// and the worker processes it starts.
pub(crate) async fn store_backend(store: String) -> RedisBackend {
    store_in(store, "hash").await
}

/// [`store_backend`] in the layout on Redis Streams.
pub(crate) async fn streams_store_backend(store: String) -> RedisBackend {
    store_in(store, "streams").await
}

/// The backend of a process check's store, in `layout`.
async fn store_in(store: String, layout: &str) -> RedisBackend {
    let prefix = format!("jt-{store}");
    // The harness names the store of a worker process in this variable: such a child leaves the
    // keys to its parent, which checks them after the child exited.
    if std::env::var_os("JOBS_CONFORMANCE_STORE").is_none() {
        cleanup_at_exit();
        owned().prefixes.push(prefix.clone());
    }
    RedisBackend::connect(&url_under(&prefix, layout))
        .await
        .expect("a Redis server at JOBS_TEST_REDIS_URL or redis://127.0.0.1:6379")
}

/// A backend on the test cluster under a fresh prefix, in the layout on Redis Streams.
pub(crate) async fn streams_cluster_backend() -> RedisBackend {
    let urls = tokio::task::block_in_place(cluster_urls);
    let nodes: Vec<&str> = urls
        .iter()
        .map(|u| u.trim_start_matches("redis://").trim_end_matches('/'))
        .collect();
    let url = format!(
        "redis+cluster://{}?prefix={}&layout=streams",
        nodes.join(","),
        fresh_prefix()
    );
    RedisBackend::connect(&url).await.expect("the test cluster")
}

/// A backend on the test cluster under a fresh prefix.
pub(crate) async fn cluster_backend() -> RedisBackend {
    let urls = tokio::task::block_in_place(cluster_urls);
    RedisBackend::connect_cluster(urls)
        .await
        .expect("the test cluster")
        .prefix(&fresh_prefix())
        .expect("a valid prefix")
}

/// The node URLs of the test cluster, started on first use.
pub(crate) fn cluster_urls() -> &'static [String] {
    static URLS: OnceLock<Vec<String>> = OnceLock::new();
    URLS.get_or_init(|| {
        let ports = free_ports(3);
        let dir = scratch_dir("cluster");
        for &port in &ports {
            let mut server = server_command(port, &dir);
            server.args(["--cluster-enabled", "yes", "--cluster-node-timeout", "5000"]);
            server.arg("--cluster-config-file");
            server.arg(format!("nodes-{port}.conf"));
            spawn_owned(server);
        }
        for &port in &ports {
            wait_for_ping(port);
        }
        let nodes: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&nodes)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .status()
            .expect("redis-cli runs");
        assert!(created.success(), "redis-cli --cluster create failed");
        for &port in &ports {
            wait_until(&format!("cluster on port {port} is ok"), || {
                redis_cli(port, &["cluster", "info"]).contains("cluster_state:ok")
            });
        }
        nodes.iter().map(|n| format!("redis://{n}")).collect()
    })
}

/// A redis-server of its own on a free port, stopped (SIGKILL) when dropped: without
/// persistence, or durable (an append-only file fsynced on every write).
pub(crate) struct Server {
    pub port: u16,
    dir: PathBuf,
    durable: bool,
    child: Child,
}

impl Server {
    /// Starts a server without persistence on a free port.
    pub(crate) fn start() -> Self {
        let port = free_ports(1)[0];
        let dir = scratch_dir(&format!("server-{port}"));
        Self::start_on(port, dir, false)
    }

    /// Starts a server on a free port that writes every change to its append-only file and
    /// fsyncs it before answering (`--appendonly yes --appendfsync always`), so a write it
    /// acknowledged survives SIGKILL.
    pub(crate) fn start_durable() -> Self {
        let port = free_ports(1)[0];
        let dir = scratch_dir(&format!("server-{port}"));
        Self::start_on(port, dir, true)
    }

    fn start_on(port: u16, dir: PathBuf, durable: bool) -> Self {
        let mut command = server_command(port, &dir);
        if durable {
            command.args(["--appendonly", "yes", "--appendfsync", "always"]);
        }
        let child = command.spawn().expect("redis-server runs");
        wait_for_ping(port);
        Server {
            port,
            dir,
            durable,
            child,
        }
    }

    /// Its URL.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server with SIGKILL and starts it again on the same port, directory and
    /// flags: one without persistence comes back empty, a durable one with what it
    /// acknowledged.
    pub(crate) fn restart(self) -> Self {
        let (port, dir, durable) = (self.port, self.dir.clone(), self.durable);
        drop(self);
        Self::start_on(port, dir, durable)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // `Child::kill` is SIGKILL: the server gets no chance to write anything more.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn server_command(port: u16, dir: &Path) -> Command {
    let mut command = Command::new("redis-server");
    command
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(dir.join(format!("{port}.log")))
        .stdout(Stdio::null());
    command
}

/// `n` distinct free ports `p` whose cluster bus port `p + 10000` is free too.
pub(crate) fn free_ports(n: usize) -> Vec<u16> {
    let mut held = Vec::new();
    while held.len() < n {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
        let port = listener.local_addr().expect("an address").port();
        if port > 55_000 {
            continue;
        }
        if let Ok(bus) = TcpListener::bind(("127.0.0.1", port + 10_000)) {
            held.push((port, listener, bus));
        }
    }
    held.into_iter().map(|(port, _, _)| port).collect()
}

fn scratch_dir(name: &str) -> PathBuf {
    cleanup_at_exit();
    let dir = std::env::temp_dir().join(format!("jobs-redis-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    owned().dirs.push(dir.clone());
    dir
}

pub(crate) fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn wait_for_ping(port: u16) {
    wait_until(&format!("redis-server on port {port} answers"), || {
        redis_cli(port, &["ping"]).trim() == "PONG"
    });
}

pub(crate) fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What this process started and must remove at exit.
struct Owned {
    pids: Vec<u32>,
    dirs: Vec<PathBuf>,
    /// Key prefixes beyond this process's own `jt-<pid>-*`.
    prefixes: Vec<String>,
}

static OWNED: Mutex<Owned> = Mutex::new(Owned {
    pids: Vec::new(),
    dirs: Vec::new(),
    prefixes: Vec::new(),
});

fn owned() -> std::sync::MutexGuard<'static, Owned> {
    OWNED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Spawns a server that lives as long as this process: from a thread that never ends, with
/// `PR_SET_PDEATHSIG`, so the kernel kills it even if this process dies abruptly; a normal exit
/// kills it in [`cleanup`].
fn spawn_owned(mut command: Command) {
    cleanup_at_exit();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // SAFETY: prctl is async-signal-safe and touches nothing of the parent.
        #[allow(unsafe_code)]
        let spawned = unsafe {
            use std::os::unix::process::CommandExt;
            command
                .pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                })
                .spawn()
        };
        let _ = tx.send(spawned.map(|child| child.id()));
        loop {
            std::thread::park();
        }
    });
    let pid = rx
        .recv()
        .expect("the owner thread answers")
        .expect("redis-server runs");
    owned().pids.push(pid);
}

fn cleanup_at_exit() {
    static REGISTERED: OnceLock<()> = OnceLock::new();
    REGISTERED.get_or_init(|| {
        // SAFETY: registers a plain function to run at exit.
        #[allow(unsafe_code)]
        unsafe {
            libc::atexit(cleanup)
        };
    });
}

/// At exit: stops the servers this process started, removes their directories, and deletes
/// the keys this process's tests left on the shared server.
extern "C" fn cleanup() {
    let owned = owned();
    for &pid in &owned.pids {
        // SAFETY: sends a signal to a child this process started.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL)
        };
    }
    for dir in &owned.dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
    let prefixes = owned
        .prefixes
        .iter()
        .cloned()
        .chain([format!("jt-{}-", std::process::id())]);
    for prefix in prefixes {
        let script = format!(
            "redis-cli -u \"$0\" --scan --pattern '{{{prefix}*' \
             | xargs -r -n 500 redis-cli -u \"$0\" unlink >/dev/null"
        );
        let _ = Command::new("sh")
            .args(["-c", &script, &redis_url()])
            .status();
    }
}

/// A subscription to the wake-up channel of `b`: the channel, and the subscription's two
/// halves (keep the sink alive while reading).
pub(crate) async fn wake_subscription(
    b: &RedisBackend,
) -> (
    String,
    jobs_redis::redis::aio::PubSubSink,
    jobs_redis::redis::aio::PubSubStream,
) {
    let channel = format!("{}:wake", b.key_prefix());
    let client = jobs_redis::redis::Client::open(redis_url()).unwrap();
    let mut pubsub = client.get_async_pubsub().await.unwrap();
    pubsub.subscribe(&channel).await.unwrap();
    let (sink, messages) = pubsub.split();
    (channel, sink, messages)
}

/// The signals on `channel` not yet read from `messages`: publishes a marker, then collects
/// the payloads before it (Redis delivers a channel's messages in the order it ran them).
pub(crate) async fn signals(
    messages: &mut (impl futures_util::Stream<Item = jobs_redis::redis::Msg> + Unpin),
    channel: &str,
) -> Vec<String> {
    use futures_util::StreamExt as _;
    let mut conn = raw_connection().await;
    let _: i64 = jobs_redis::redis::cmd("PUBLISH")
        .arg(channel)
        .arg("<end>")
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut seen = Vec::new();
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(5), messages.next())
            .await
            .expect("the marker arrives")
            .expect("the subscription stays open");
        let payload: String = msg.get_payload().unwrap();
        if payload == "<end>" {
            return seen;
        }
        seen.push(payload);
    }
}
