//! Fresh isolated backends (memory; Postgres in a schema of its own; Redis under a key prefix of
//! its own), jobs and job types stored through the backend API, and an HTTP client over the
//! router.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use jobs_core::{
    AnyBackend, Backend, Backoff, CompleteParams, Completion, EnqueueParams, ErrorKind,
    ErrorReport, FailParams, Failure, FetchParams, JobId, JobTypeInfo, LeasedJob, MemoryBackend,
    NewJob, PublishTypesParams, Timestamp,
};
use jobs_postgres::sqlx;
use jobs_postgres::PgBackend;
use jobs_redis::RedisBackend;
use serde_json::{json, value::RawValue, Value};
use tower::ServiceExt;

/// Which store a test runs on.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Store {
    Memory,
    Postgres,
    Redis,
    /// Redis in the layout on streams (`layout=streams`), being built: `docs/redis-streams.md`.
    RedisStreams,
}

/// Runs `scenario` on a fresh backend of `store`, then removes what it stored.
pub(crate) async fn run<F, Fut>(store: Store, scenario: F)
where
    F: FnOnce(AnyBackend) -> Fut,
    Fut: Future<Output = ()>,
{
    match store {
        Store::Memory => scenario(AnyBackend::new(MemoryBackend::new())).await,
        Store::Postgres => {
            let backend = postgres().await;
            scenario(AnyBackend::new(backend.clone())).await;
            let drop = format!(
                "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
                backend.schema_name()
            );
            sqlx::query(&drop)
                .execute(backend.pool())
                .await
                .expect("drop schema");
        }
        Store::Redis | Store::RedisStreams => {
            let prefix = fresh_prefix();
            let url = match store {
                // The prefix in the URL: a connection checks its prefix's layout.
                Store::RedisStreams => format!("{}?prefix={prefix}&layout=streams", redis_url()),
                _ => redis_url(),
            };
            let backend = RedisBackend::connect(&url)
                .await
                .expect("a Redis server")
                .prefix(&prefix)
                .expect("a valid prefix");
            scenario(AnyBackend::new(backend)).await;
            remove_keys(&prefix).await;
        }
    }
}

/// One test per store for each scenario `name` (an `async fn(AnyBackend)` of the module).
macro_rules! on_every_store {
    ($($name:ident),* $(,)?) => {
        $(mod $name {
            use crate::support::{run, Store};

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn memory() { run(Store::Memory, super::$name).await }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() { run(Store::Postgres, super::$name).await }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() { run(Store::Redis, super::$name).await }
        })*
    };
}
pub(crate) use on_every_store;

/// One test on the Redis layout on streams for each scenario `name` that the layout handles so
/// far, in a module `redis_streams`.
macro_rules! on_redis_streams {
    ($($name:ident),* $(,)?) => {
        mod redis_streams {
            use crate::support::{run, Store};
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { run(Store::RedisStreams, super::$name).await }
            )*
        }
    };
}
pub(crate) use on_redis_streams;

fn postgres_url() -> String {
    std::env::var("JOBS_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

fn redis_url() -> String {
    std::env::var("JOBS_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".into())
}

/// A migrated backend in a new schema `jobs_web_<random>`.
async fn postgres() -> PgBackend {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .connect(&postgres_url())
        .await
        .expect("the test database");
    let schema = format!(
        "jobs_web_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..16]
    );
    let backend = PgBackend::from_pool(pool)
        .schema(&schema)
        .expect("a valid schema");
    backend.migrate().await.expect("migrations apply");
    backend
}

/// A key prefix no other test or process uses.
fn fresh_prefix() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "jw-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Deletes the keys under `prefix` (the backend's keys start with `{prefix`).
async fn remove_keys(prefix: &str) {
    use jobs_redis::redis::AsyncCommands;
    let client = jobs_redis::redis::Client::open(redis_url()).expect("a Redis URL");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("Redis");
    let pattern = format!("{{{prefix}*");
    let keys: Vec<String> = {
        let mut iter = conn.scan_match::<_, String>(&pattern).await.expect("scan");
        let mut keys = Vec::new();
        while let Some(key) = iter.next_item().await {
            keys.push(key.expect("a key"));
        }
        keys
    };
    for chunk in keys.chunks(500) {
        let _: () = conn.unlink(chunk).await.expect("unlink");
    }
}

/// A job of `name` in `queue` with `payload`, due now, one attempt.
pub(crate) fn new_job(queue: &str, name: &str, payload: Value) -> NewJob {
    NewJob {
        id: JobId::new(),
        name: name.into(),
        queue: queue.into(),
        payload: serde_json::value::to_raw_value(&payload).expect("JSON"),
        version: 1,
        priority: 0,
        run_at: now(),
        max_attempts: 1,
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

pub(crate) fn now() -> Timestamp {
    chrono::Utc::now()
}

/// Stores `jobs`, returning their ids.
pub(crate) async fn put(backend: &AnyBackend, jobs: Vec<NewJob>) -> Vec<JobId> {
    let stored = backend
        .enqueue(EnqueueParams { jobs, now: now() })
        .await
        .expect("enqueue");
    stored.into_iter().map(|e| e.id).collect()
}

/// Stores `n` jobs of `queue` and returns their ids.
pub(crate) async fn put_n(backend: &AnyBackend, queue: &str, n: usize) -> Vec<JobId> {
    let jobs = (0..n)
        .map(|i| new_job(queue, "welcome", json!({ "n": i })))
        .collect();
    put(backend, jobs).await
}

/// Leases every ready job of `queue` (at most 1,000) as worker `worker`.
pub(crate) async fn lease(backend: &AnyBackend, queue: &str, worker: &str) -> Vec<LeasedJob> {
    backend
        .fetch(FetchParams {
            ended: Vec::new(),
            queues: vec![queue.into()],
            limit: 1_000,
            worker: worker.into(),
            lease_for: Duration::from_secs(600),
            now: now(),
            known: None,
            flow: Vec::new(),
            reserve: 0,
            deliver: 0,
        })
        .await
        .expect("fetch")
}

/// Completes every ready job of `queue` with the result `{"sent": true}`.
pub(crate) async fn complete_all(backend: &AnyBackend, queue: &str) -> Vec<JobId> {
    let leased = lease(backend, queue, "tests").await;
    let items = leased
        .iter()
        .map(|j| Completion {
            lease: j.lease(),
            result: RawValue::from_string(r#"{"sent":true}"#.into()).expect("JSON"),
        })
        .collect();
    backend
        .complete(CompleteParams { items, now: now() })
        .await
        .expect("complete");
    leased.iter().map(|j| j.record.id).collect()
}

/// Sends every ready job of `queue` to dead with a fatal error saying `message`.
pub(crate) async fn kill_all(backend: &AnyBackend, queue: &str, message: &str) -> Vec<JobId> {
    let leased = lease(backend, queue, "tests").await;
    let items = leased
        .iter()
        .map(|j| Failure {
            lease: j.lease(),
            error: ErrorReport::new(ErrorKind::Fatal, message),
            retry_at: None,
        })
        .collect();
    backend
        .fail(FailParams { items, now: now() })
        .await
        .expect("fail");
    leased.iter().map(|j| j.record.id).collect()
}

/// The stored name of the type [`publish`] publishes.
pub(crate) const NAME: &str = "send_welcome_email";
/// A description with markup, which must show as text.
pub(crate) const SCRIPT: &str = "<script>alert(1)</script>";

/// A type as a worker publishes it: `version`, whose payload needs an integer `user_id` and a
/// string `email`.
pub(crate) fn welcome(version: u32) -> JobTypeInfo {
    JobTypeInfo {
        name: NAME.into(),
        version,
        queue: "email".into(),
        max_attempts: 3,
        priority: 2,
        backoff: Backoff::exponential(Duration::from_secs(1)),
        timeout: Some(Duration::from_secs(30)),
        tags: vec!["onboarding".into()],
        schema: Some(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "SendWelcomeEmail",
            "description": format!("Welcomes a new user. {SCRIPT}"),
            "type": "object",
            "properties": {
                "user_id": { "type": "integer", "format": "int64" },
                "email": { "type": "string" }
            },
            "required": ["user_id", "email"]
        })),
    }
}

/// Publishes versions 1 and 2 of the type, as two releases' workers would.
pub(crate) async fn publish(b: &AnyBackend) {
    b.publish_types(PublishTypesParams {
        types: vec![welcome(1), welcome(2)],
        now: now(),
    })
    .await
    .expect("publish types");
}

/// What the dashboard answered.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) body: String,
    pub(crate) location: Option<String>,
    pub(crate) content_type: String,
}

impl Reply {
    /// The body as JSON.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// How many times `needle` occurs in the body.
    pub(crate) fn count(&self, needle: &str) -> usize {
        self.body.matches(needle).count()
    }

    /// The text of the first element after the attribute `attr` (say `data-count="dead"`)
    /// that follows `after`, tags removed and trimmed.
    pub(crate) fn text_after(&self, after: &str, attr: &str) -> String {
        let from = self
            .body
            .find(after)
            .unwrap_or_else(|| panic!("no {after} in {}", self.body));
        let rest = &self.body[from..];
        let at = rest
            .find(attr)
            .unwrap_or_else(|| panic!("no {attr} after {after}"));
        let rest = &rest[at..];
        let open = rest.find('>').expect("a tag's end") + 1;
        let close = rest
            .find("</td>")
            .or_else(|| rest.find("</"))
            .expect("an end tag");
        let mut text = String::new();
        let mut in_tag = false;
        for c in rest[open..close].chars() {
            match c {
                '<' => in_tag = true,
                '>' => in_tag = false,
                c if !in_tag => text.push(c),
                _ => {}
            }
        }
        text.trim().to_string()
    }
}

/// A client of one dashboard router, nested under `prefix` (`""` for none).
pub(crate) struct Web {
    router: Router,
    prefix: String,
}

impl Web {
    /// The full dashboard at the root.
    pub(crate) fn new(backend: &AnyBackend) -> Self {
        Web::of(jobs_web::router(backend.clone()), "")
    }

    /// A read-only dashboard at the root.
    pub(crate) fn read_only(backend: &AnyBackend) -> Self {
        Web::of(
            jobs_web::Dashboard::new(backend.clone())
                .read_only(true)
                .router(),
            "",
        )
    }

    /// The full dashboard nested under `prefix`.
    pub(crate) fn nested(backend: &AnyBackend, prefix: &str) -> Self {
        let router = Router::new().nest(prefix, jobs_web::router(backend.clone()));
        Web::of(router, prefix)
    }

    fn of(router: Router, prefix: &str) -> Self {
        Web {
            router,
            prefix: prefix.to_string(),
        }
    }

    /// `GET {prefix}/{path}`.
    pub(crate) async fn get(&self, path: &str) -> Reply {
        self.send(Request::get(self.url(path)).body(Body::empty()).unwrap())
            .await
    }

    /// A POST of the form `fields` to `path`, with the headers `headers`.
    pub(crate) async fn post_form(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut request = Request::post(self.url(path))
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let body = serde_urlencoded::to_string(fields).unwrap();
        self.send(request.body(Body::from(body)).unwrap()).await
    }

    /// A POST of the form `fields` with the dashboard's token.
    pub(crate) async fn submit(&self, path: &str, fields: &[(&str, &str)]) -> Reply {
        let token = self.token().await;
        let mut all = vec![("csrf", token.as_str())];
        all.extend_from_slice(fields);
        self.post_form(path, &all, &[]).await
    }

    /// A POST of `body` as JSON to `path`, with `token` in `x-csrf-token` if given.
    pub(crate) async fn post_json(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        let mut request =
            Request::post(self.url(path)).header(header::CONTENT_TYPE, "application/json");
        if let Some(token) = token {
            request = request.header("x-csrf-token", token);
        }
        self.send(request.body(Body::from(body.to_string())).unwrap())
            .await
    }

    /// The dashboard's CSRF token, from `api/csrf`.
    pub(crate) async fn token(&self) -> String {
        let reply = self.get("api/csrf").await;
        assert_eq!(reply.status, StatusCode::OK);
        reply.json()["token"].as_str().expect("a token").to_string()
    }

    /// The response to `request`, its body whole (not for event streams).
    pub(crate) async fn send(&self, request: Request<Body>) -> Reply {
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("infallible");
        let status = response.status();
        let location = response
            .headers()
            .get(header::LOCATION)
            .map(|v| v.to_str().unwrap().to_string());
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .map_or(String::new(), |v| v.to_str().unwrap().to_string());
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        Reply {
            status,
            body: String::from_utf8(bytes.to_vec()).expect("UTF-8"),
            location,
            content_type,
        }
    }

    /// The router, for requests the helpers do not make.
    pub(crate) fn router(&self) -> Router {
        self.router.clone()
    }

    /// The URL of `path` under the prefix (`""`: the overview, at the prefix itself).
    pub(crate) fn url(&self, path: &str) -> String {
        match path.trim_start_matches('/') {
            "" if !self.prefix.is_empty() => self.prefix.clone(),
            path => format!("{}/{}", self.prefix, path),
        }
    }
}
