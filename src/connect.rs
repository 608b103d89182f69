//! `jobs::connect(url)`: the backend a URL names.

use jobs_core::{AnyBackend, Error, MemoryBackend, UrlOptions};

/// Connects to the backend that `url` names and returns it as an [`AnyBackend`]:
///
/// - `memory://` — a new in-process store (`memory://NAME` returns the same store for the same
///   NAME within the process, so a producer and a worker can share it);
/// - `postgres://…` or `postgresql://…` — PostgreSQL (feature `postgres`);
/// - `redis://…`, `rediss://…` or `redis+cluster://…` — Redis (feature `redis`).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let err = jobs::connect("mongodb://localhost").await.unwrap_err();
/// assert!(err.to_string().contains("unsupported backend URL scheme `mongodb`"));
/// # });
/// ```
pub async fn connect(url: &str) -> Result<AnyBackend, Error> {
    let scheme = url
        .split_once("://")
        .map(|(scheme, _)| scheme)
        .ok_or_else(|| {
            Error::Invalid(format!("`{url}` is not a backend URL: expected SCHEME://…"))
        })?;
    match scheme {
        "memory" => memory(&url["memory://".len()..]).map(AnyBackend::new),
        "postgres" | "postgresql" => postgres(url).await,
        "redis" | "rediss" | "redis+cluster" => redis(url).await,
        other => Err(Error::Invalid(format!(
            "unsupported backend URL scheme `{other}`: expected memory://, postgres:// or redis://"
        ))),
    }
}

fn memory(rest: &str) -> Result<MemoryBackend, Error> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};

    let name = UrlOptions::parse(rest, &[], &[])?.driver_url().to_string();
    if name.is_empty() {
        return Ok(MemoryBackend::new());
    }
    static NAMED: OnceLock<Mutex<HashMap<String, MemoryBackend>>> = OnceLock::new();
    let mut named = NAMED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    Ok(named.entry(name).or_default().clone())
}

#[cfg(feature = "postgres")]
async fn postgres(url: &str) -> Result<AnyBackend, Error> {
    Ok(AnyBackend::new(
        jobs_postgres::PgBackend::connect(url).await?,
    ))
}

#[cfg(not(feature = "postgres"))]
async fn postgres(_url: &str) -> Result<AnyBackend, Error> {
    Err(Error::Invalid(
        "postgres:// URLs need the `postgres` feature of `jobs`".into(),
    ))
}

#[cfg(feature = "redis")]
async fn redis(url: &str) -> Result<AnyBackend, Error> {
    Ok(AnyBackend::new(
        jobs_redis::RedisBackend::connect(url).await?,
    ))
}

#[cfg(not(feature = "redis"))]
async fn redis(_url: &str) -> Result<AnyBackend, Error> {
    Err(Error::Invalid(
        "redis:// URLs need the `redis` feature of `jobs`".into(),
    ))
}
