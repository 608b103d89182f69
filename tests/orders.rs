//! The orders example (`examples/orders`) driven over HTTP, as its users would: every order
//! completes, or, with the declined card, is compensated; each side effect happens exactly once
//! per order; a retried `POST` with the same `Idempotency-Key` makes no second order.
//!
//! The load test runs the web server and the worker as two processes on PostgreSQL, kills the
//! worker with SIGKILL a third of the way through and starts another, and prints the latency
//! of `POST /orders`. It places 200 orders from 20 clients (after one untimed warm-up order
//! each); `ORDERS_LOAD=1000` places 1,000. A second load of 100 runs the worker on a pool of 2
//! connections, as the guide recommends beside a web server.
//!
//! By default each client sends its next order as soon as it has the answer to the last: the
//! machine runs flat out, and a POST's latency is mostly its wait behind the other clients'
//! (with 20 in flight, 20 / throughput). `ORDERS_RATE=400` sends the orders at that many a
//! second instead, order `i` due at `i / rate`, each timed from when it was due (so a slow
//! answer that holds up its client's next order counts against that order as well): the
//! latency a POST has at that rate. `ORDERS_WORKER_POOL=2` sizes the worker's connection pool
//! (docs/orders.md, "Latency").

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::Request;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use jobs::postgres::sqlx::{self, Row as _};
use serde_json::Value;

#[path = "support/examples.rs"]
mod examples;

const DECLINED_CARD: &str = "4000-0000-0000-0002";
const GOOD_CARD: &str = "4242-4242-4242-4242";

type Http = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

/// A running process of the example and the address its web server listens on, if any.
struct Orders {
    child: Child,
    addr: Option<String>,
}

impl Orders {
    /// Starts the example with `role` on `url`; a web server's address is read from its first
    /// line.
    fn start(role: &str, url: &str, app_schema: &str) -> Orders {
        Orders::spawn(role, url, app_schema).ready()
    }

    /// Starts the example with `role` on `url`, without waiting for it to be up.
    fn spawn(role: &str, url: &str, app_schema: &str) -> Orders {
        let child = Command::new(examples::example("orders"))
            .args(["--role", role, "--url", url, "--bind", "127.0.0.1:0"])
            .args(["--app-schema", app_schema])
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the orders example");
        Orders { child, addr: None }
    }

    /// Waits for the first line: where its web server listens, or that its worker runs.
    fn ready(mut self) -> Orders {
        let mut first = String::new();
        BufReader::new(self.child.stdout.take().expect("its stdout"))
            .read_line(&mut first)
            .expect("its first line");
        self.addr = first
            .trim()
            .strip_prefix("listening on ")
            .map(str::to_string);
        assert!(
            self.addr.is_some() || first.starts_with("worker running"),
            "unexpected first line {first:?}"
        );
        self
    }

    fn addr(&self) -> &str {
        self.addr.as_deref().expect("a web server")
    }

    /// Kills the process with SIGKILL: no shutdown, no hand-back.
    fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap it");
    }
}

impl Drop for Orders {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http() -> Http {
    Client::builder(TokioExecutor::new()).build_http()
}

/// `POST /orders`: the status, the `Location`, whether it was a replay, and the body.
async fn place(
    client: &Http,
    addr: &str,
    items: u32,
    card: &str,
    key: Option<&str>,
) -> (u16, String, bool, Value) {
    let body = serde_json::json!({ "items": items, "card": card }).to_string();
    let mut request =
        Request::post(format!("{addr}/orders")).header("content-type", "application/json");
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    let request = request.body(Full::from(body)).expect("a request");
    let response = client.request(request).await.expect("POST /orders");
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (location, replayed) = (header("location"), header("idempotent-replayed") == "true");
    let body = serde_json::from_slice(&body_of(response).await).expect("a JSON body");
    (status, location, replayed, body)
}

/// The whole body of `response`.
async fn body_of<B>(response: axum::http::Response<B>) -> Bytes
where
    B: axum::body::HttpBody<Data = Bytes>,
    B::Error: std::fmt::Debug,
{
    response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes()
}

/// `GET path`: the status and the JSON body.
async fn get(client: &Http, addr: &str, path: &str) -> (u16, Value) {
    let uri = format!("{addr}{path}").parse().expect("a URI");
    let response = client.get(uri).await.expect("GET");
    let status = response.status().as_u16();
    let bytes = body_of(response).await;
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// Waits until every order of `orders` has ended; their views.
async fn ended(client: &Http, addr: &str, orders: &[String]) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut views = Vec::with_capacity(orders.len());
    for id in orders {
        loop {
            let (status, view) = get(client, addr, &format!("/orders/{id}")).await;
            assert_eq!(status, 200, "GET /orders/{id}: {view}");
            let state = view["state"].as_str().unwrap_or("").to_string();
            if state != "running" && state != "compensating" {
                views.push(view);
                break;
            }
            assert!(Instant::now() < deadline, "order {id} did not end: {view}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    views
}

/// The side effects an order that ended in `state` must have recorded, once each.
fn expected_effects(state: &str) -> Vec<&'static str> {
    match state {
        "completed" => vec!["completed", "email", "payment", "pdf", "stock_reserved"],
        "failed" => vec!["stock_released", "stock_reserved"],
        other => panic!("unexpected state {other}"),
    }
}

/// The test database.
fn postgres() -> String {
    std::env::var("JOBS_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// Drops the test's schemas, with everything in them.
async fn drop_schemas(pool: &sqlx::PgPool, schemas: [&String; 2]) {
    for schema in schemas {
        sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
            .execute(pool)
            .await
            .expect("drop the test schema");
    }
}

fn isolated(prefix: &str) -> String {
    format!("{prefix}_{}", jobs::JobId::new().0.simple())
}

/// Checkpoints, so that the server has WAL segments recycled for the load's 35 MB of WAL. A
/// server that has not yet written that much since its last checkpoint makes each new 16 MB
/// segment by writing zeros while every commit waits (40 ms here, twice a load), where one in
/// a steady state of writing renames a segment it no longer needs. Best effort: a role that may
/// not checkpoint measures with the segments the server has.
async fn settle_wal(pool: &sqlx::PgPool) {
    if let Err(e) = sqlx::query("CHECKPOINT").execute(pool).await {
        eprintln!("no checkpoint before the load ({e}): new WAL segments may stall commits");
    }
}

/// The `p` quantile of `sorted` in ms (NaN when it is empty).
fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1_000.0
}

/// How a load is placed: `n` orders, sent as fast as they are answered or at `rate` a second,
/// with the worker's pool at `worker_pool` connections or the default; `measured` checkpoints
/// first (see [`settle_wal`]).
struct Load {
    n: usize,
    rate: Option<f64>,
    worker_pool: Option<u32>,
    measured: bool,
}

/// The load `ORDERS_LOAD`, `ORDERS_RATE` and `ORDERS_WORKER_POOL` ask for (200 orders, flat
/// out, the default pool, unmeasured, when none is set).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orders_complete_once_each_while_the_worker_is_killed() {
    let var = |name: &str| std::env::var(name).ok();
    place_under_load(Load {
        n: var("ORDERS_LOAD").map_or(200, |v| v.parse().expect("a number of orders")),
        rate: var("ORDERS_RATE").map(|v| v.parse().expect("orders a second")),
        worker_pool: var("ORDERS_WORKER_POOL").map(|v| v.parse().expect("a pool size")),
        measured: var("ORDERS_LOAD").is_some(),
    })
    .await;
}

/// The same with the worker's pool at 2 connections (docs/orders.md, "Latency"): its handlers
/// wait for one another's connections, and still every order completes once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_worker_pool_completes_every_order_once() {
    place_under_load(Load {
        n: 100,
        rate: None,
        worker_pool: Some(2),
        measured: false,
    })
    .await;
}

/// Places `load` while the worker is killed once, then checks every order and effect.
async fn place_under_load(load: Load) {
    let Load {
        n,
        rate,
        worker_pool,
        measured,
    } = load;
    const CLIENTS: usize = 20;
    const ALONE: usize = 50;
    let postgres = postgres();
    let (jobs_schema, app_schema) = (isolated("jobs_test_orders"), isolated("shop_test"));
    let url = format!("{postgres}?schema={jobs_schema}");
    let web = Orders::start("web", &url, &app_schema);
    // The web server's pool keeps the default.
    let worker_url = match worker_pool {
        Some(size) => format!("{url}&pool_size={size}"),
        None => url.clone(),
    };
    let worker = Orders::start("worker", &worker_url, &app_schema);
    let addr = web.addr().to_string();
    let pool = sqlx::PgPool::connect(&postgres).await.expect("PostgreSQL");
    if measured {
        // Not for CI's short loads, which check what happens, not how fast: a checkpoint's
        // writes would only slow the tests running beside them.
        settle_wal(&pool).await;
    }
    // First one client alone: the time a POST takes without waiting for others.
    let alone_client = http();
    let mut alone = Vec::with_capacity(ALONE);
    let mut alone_ids = Vec::with_capacity(ALONE);
    for _ in 0..ALONE {
        let started = Instant::now();
        let (status, _, _, body) = place(&alone_client, &addr, 1, GOOD_CARD, None).await;
        alone.push(started.elapsed());
        assert_eq!(status, 202, "{body}");
        alone_ids.push(body["order"].as_str().expect("an id").to_string());
    }
    alone.sort_unstable();
    let placed = Arc::new(AtomicUsize::new(0));
    // Request start times, and the kill and the restart, are read from here.
    let t0 = Instant::now();
    let killed = {
        // A third of the way through, the worker dies without a word, and another starts.
        let (placed, worker_url, app_schema) =
            (placed.clone(), worker_url.clone(), app_schema.clone());
        tokio::spawn(async move {
            while placed.load(Ordering::SeqCst) < n / 3 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let down = t0.elapsed();
            // Off the clients' threads: reaping the killed process and reading the new one's
            // first line block, and would hold up the requests measured meanwhile.
            tokio::task::spawn_blocking(move || worker.kill())
                .await
                .expect("the kill");
            tokio::time::sleep(Duration::from_millis(300)).await;
            let second = tokio::task::spawn_blocking(move || {
                Orders::start("worker", &worker_url, &app_schema)
            })
            .await
            .expect("the second worker");
            (second, down..t0.elapsed())
        })
    };
    let warm = Arc::new(tokio::sync::Barrier::new(CLIENTS));
    // When the timed orders begin: set by the first client past the warm-up.
    let begun = Arc::new(std::sync::OnceLock::new());
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (addr, placed, warm, begun) =
                (addr.clone(), placed.clone(), warm.clone(), begun.clone());
            tokio::spawn(async move {
                let client = http();
                // Warm up first, untimed, all clients at once: each client's connection opens,
                // and the server's pool grows to its size with every statement of a POST
                // prepared on each connection, before the timed requests.
                let (status, _, _, body) = place(&client, &addr, 1, GOOD_CARD, None).await;
                assert_eq!(status, 202, "{body}");
                let warm_up = body["order"].as_str().expect("an order id").to_string();
                warm.wait().await;
                let begun = *begun.get_or_init(Instant::now);
                let mut mine = Vec::new();
                for i in (c..n).step_by(CLIENTS) {
                    let card = if i % 50 == 7 {
                        DECLINED_CARD
                    } else {
                        GOOD_CARD
                    };
                    let key = format!("load-{i}");
                    let started = match rate {
                        Some(rate) => {
                            let due = begun + Duration::from_secs_f64(i as f64 / rate);
                            tokio::time::sleep_until(due.into()).await;
                            due
                        }
                        None => Instant::now(),
                    };
                    let (status, location, replayed, body) =
                        place(&client, &addr, 1 + (i % 3) as u32, card, Some(&key)).await;
                    let took = started.elapsed();
                    let at = started - t0;
                    assert_eq!(status, 202, "{body}");
                    assert!(!replayed);
                    let id = body["order"].as_str().expect("an order id").to_string();
                    assert_eq!(location, format!("/orders/{id}"));
                    if i % 10 == 0 {
                        // A client that lost the answer sends the same request again.
                        let (status, again, replayed, body) =
                            place(&client, &addr, 1, card, Some(&key)).await;
                        assert_eq!(
                            (status, again.as_str(), replayed),
                            (202, location.as_str(), true)
                        );
                        assert_eq!(body["order"].as_str(), Some(id.as_str()));
                    }
                    placed.fetch_add(1, Ordering::SeqCst);
                    mine.push((id, at, took));
                }
                (warm_up, mine)
            })
        })
        .collect();
    let mut orders = Vec::with_capacity(n);
    let mut warm_ups = Vec::with_capacity(CLIENTS);
    for client in clients {
        let (warm_up, mine) = client.await.expect("a client");
        warm_ups.push(warm_up);
        orders.extend(mine);
    }
    let (_second_worker, no_worker) = killed.await.expect("the kill");
    let mut latencies: Vec<Duration> = orders.iter().map(|(_, _, took)| *took).collect();
    latencies.sort_unstable();
    // The POSTs sent while no worker ran, apart: what the worker's work costs the web server
    // on a machine they share.
    let mut alone_on_the_machine: Vec<Duration> = orders
        .iter()
        .filter(|(_, at, _)| no_worker.contains(at))
        .map(|(_, _, took)| *took)
        .collect();
    alone_on_the_machine.sort_unstable();
    let ids: Vec<String> = alone_ids
        .into_iter()
        .chain(warm_ups)
        .chain(orders.into_iter().map(|(id, _, _)| id))
        .collect();
    let views = ended(&http(), &addr, &ids).await;

    let stored: i64 = sqlx::query(&format!("SELECT count(*) FROM {app_schema}.orders"))
        .fetch_one(&pool)
        .await
        .expect("count orders")
        .get(0);
    assert_eq!(
        stored,
        (n + ALONE + CLIENTS) as i64,
        "one order per request, replays included"
    );
    let rows = sqlx::query(&format!(
        "SELECT order_id, effect, count(*) AS n FROM {app_schema}.order_effects GROUP BY 1, 2"
    ))
    .fetch_all(&pool)
    .await
    .expect("the effects");
    let mut effects: std::collections::HashMap<String, Vec<(String, i64)>> = Default::default();
    for row in &rows {
        effects
            .entry(row.get("order_id"))
            .or_default()
            .push((row.get("effect"), row.get("n")));
    }
    let (mut completed, mut compensated, mut twice) = (0, 0, 0);
    for (id, view) in ids.iter().zip(&views) {
        let state = view["state"].as_str().expect("a state");
        let mut got = effects.remove(id).unwrap_or_default();
        got.sort();
        twice += got.iter().filter(|(_, n)| *n > 1).count();
        let names: Vec<&str> = got.iter().map(|(e, _)| e.as_str()).collect();
        assert_eq!(names, expected_effects(state), "order {id}: {view}");
        match state {
            "completed" => completed += 1,
            _ => compensated += 1,
        }
    }
    assert_eq!(twice, 0, "a side effect happened twice");
    let payments: i64 = sqlx::query(&format!("SELECT count(*) FROM {app_schema}.payments"))
        .fetch_one(&pool)
        .await
        .expect("count payments")
        .get(0);
    assert_eq!(payments, completed, "one payment per paid order");
    assert_eq!(compensated, (0..n).filter(|i| i % 50 == 7).count());
    let pace = rate.map_or("as fast as they are answered".into(), |r| {
        format!("at {r}/s")
    });
    let worker_pool = worker_pool.map_or("the default".into(), |size| size.to_string());
    eprintln!(
        "orders load: {ALONE} orders from one client, then {n} from {CLIENTS} clients {pace} \
         with the worker (pool: {worker_pool}) killed once; {completed} completed, \
         {compensated} compensated, 0 side effects twice; POST /orders alone p50 {:.2} ms, \
         p99 {:.2} ms; under load p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; of those, the {} \
         sent in the {:.0} ms no worker ran: p50 {:.2} ms, p99 {:.2} ms",
        percentile(&alone, 0.50),
        percentile(&alone, 0.99),
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99),
        percentile(&latencies, 1.0),
        alone_on_the_machine.len(),
        (no_worker.end - no_worker.start).as_secs_f64() * 1_000.0,
        percentile(&alone_on_the_machine, 0.50),
        percentile(&alone_on_the_machine, 0.99),
    );
    drop(web);
    drop_schemas(&pool, [&jobs_schema, &app_schema]).await;
}

/// A web server and a worker started at the same moment on a new schema both come up (each
/// creates the shop's tables if missing, one after the other), and an order placed with one
/// is completed by the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_server_and_a_worker_started_together_both_come_up() {
    let postgres = postgres();
    let (jobs_schema, app_schema) = (isolated("jobs_test_together"), isolated("shop_test"));
    let url = format!("{postgres}?schema={jobs_schema}");
    let (web, worker) = (
        Orders::spawn("web", &url, &app_schema),
        Orders::spawn("worker", &url, &app_schema),
    );
    let (web, worker) = (web.ready(), worker.ready());
    let client = http();
    let (status, _, _, body) = place(&client, web.addr(), 2, GOOD_CARD, None).await;
    assert_eq!(status, 202, "{body}");
    let id = body["order"].as_str().expect("an order id").to_string();
    let views = ended(&client, web.addr(), &[id]).await;
    assert_eq!(views[0]["state"], "completed", "{}", views[0]);
    drop((web, worker));
    let pool = sqlx::PgPool::connect(&postgres).await.expect("PostgreSQL");
    drop_schemas(&pool, [&jobs_schema, &app_schema]).await;
}

/// On `memory://` (no server) and on Redis, one process serves and works: an order completes,
/// a declined one is compensated, a replayed request is answered with the first order, and the
/// event stream ends with the order's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orders_run_in_one_process_on_memory_and_redis() {
    let redis =
        std::env::var("JOBS_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let redis = format!("{redis}?prefix={}", isolated("jobs_test_orders"));
    for url in ["memory://".to_string(), redis] {
        let server = Orders::start("all", &url, "shop");
        let addr = server.addr().to_string();
        let client = http();
        let (status, _, _, paid) = place(&client, &addr, 2, GOOD_CARD, Some("k-1")).await;
        assert_eq!(status, 202);
        let (_, _, replayed, again) = place(&client, &addr, 2, GOOD_CARD, Some("k-1")).await;
        assert!(
            replayed && again["order"] == paid["order"],
            "{url}: {again}"
        );
        let (_, _, _, declined) = place(&client, &addr, 1, DECLINED_CARD, None).await;
        let ids = [&paid, &declined].map(|b| b["order"].as_str().expect("an id").to_string());
        let views = ended(&client, &addr, &ids).await;
        assert_eq!(views[0]["state"], "completed", "{url}: {}", views[0]);
        assert_eq!(views[1]["state"], "failed", "{url}: {}", views[1]);
        for view in &views {
            let mut effects: Vec<&str> = view["effects"]
                .as_array()
                .expect("effects")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            effects.sort_unstable();
            assert_eq!(effects, expected_effects(view["state"].as_str().unwrap()));
        }
        let steps = views[1]["steps"].as_array().expect("steps");
        let pay = steps
            .iter()
            .find(|s| s["name"] == "take_payment")
            .expect("pay");
        assert_eq!(
            (pay["status"].as_str(), pay["error"].as_str()),
            (Some("dead"), Some("card declined"))
        );
        let stream = get_events(&addr, &ids[0]).await;
        assert!(stream.contains("event: order"), "{stream}");
        assert!(stream.contains(r#""state":"completed""#), "{stream}");
        let (status, _) = get(&client, &addr, "/orders/nope").await;
        assert_eq!(status, 404);
    }
}

/// The event stream of order `id`, read to its end (it ends with the order's end).
async fn get_events(addr: &str, id: &str) -> String {
    let uri = format!("{addr}/orders/{id}/events").parse().expect("a URI");
    let response = tokio::time::timeout(Duration::from_secs(10), http().get(uri))
        .await
        .expect("in time")
        .expect("GET events");
    assert_eq!(response.status().as_u16(), 200);
    let body = tokio::time::timeout(Duration::from_secs(10), response.into_body().collect())
        .await
        .expect("the stream ends")
        .expect("a body");
    String::from_utf8(body.to_bytes().to_vec()).expect("utf-8")
}
