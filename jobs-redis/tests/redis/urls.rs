//! URLs: their options, and the typed errors of bad URLs (`Invalid`) and of servers that are not
//! there (`Connect`, at once).

use std::net::TcpListener;
use std::time::{Duration, Instant};

use jobs_core::{
    Backend, CompleteParams, Completion, EnqueueParams, Error, FetchParams, JobStatus, Operations,
    SubscribeParams,
};
use jobs_redis::{redis, RedisBackend};
use serde_json::value::RawValue;

use crate::support::{cluster_urls, fresh_prefix, job, raw_connection, redis_url, t0};

#[tokio::test]
async fn a_refused_connection_is_a_connect_error_at_once() {
    let started = Instant::now();
    let err = RedisBackend::connect("redis://127.0.0.1:1")
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(&err, Error::Connect { target, .. } if target == "redis://127.0.0.1:1"),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("cannot connect to redis://127.0.0.1:1: "),
        "{err}"
    );
    assert!(took < Duration::from_millis(100), "took {took:?}");
}

#[tokio::test]
async fn a_refused_cluster_is_a_connect_error_at_once() {
    let started = Instant::now();
    let err = RedisBackend::connect("redis+cluster://127.0.0.1:1,127.0.0.1:2")
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert!(took < Duration::from_millis(100), "took {took:?}");
}

#[tokio::test]
async fn errors_hide_the_password() {
    for url in [
        "redis://app:hunter2@127.0.0.1:1",
        "redis://app:hunter2@127.0.0.1:port",
    ] {
        let err = RedisBackend::connect(url).await.unwrap_err().to_string();
        assert!(!err.contains("hunter2"), "{err}");
        assert!(err.contains("redis://app:***@127.0.0.1:"), "{err}");
    }
}

#[tokio::test]
async fn bad_urls_are_invalid() {
    for url in [
        "http://127.0.0.1:6379",
        "redis://127.0.0.1:port",
        "redis://127.0.0.1:99999",
        "redis://127.0.0.1:6379/not-a-db",
        "not a url",
        "redis+cluster://",
        "redis+cluster://127.0.0.1:port",
        "redis://127.0.0.1:6379?protocol=resp9",
    ] {
        let err = RedisBackend::connect(url).await.unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "{url}: {err:?}");
    }
}

#[tokio::test]
async fn unknown_options_are_invalid_and_name_the_valid_ones() {
    let err = RedisBackend::connect(&format!("{}?prefx=shop", redis_url()))
        .await
        .unwrap_err();
    assert!(matches!(&err, Error::Invalid(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "unknown option `prefx` in the backend URL; expected one of: connect_timeout, layout, \
         prefix, protocol, response_timeout"
    );
    for bad in [
        "connect_timeout=soon",
        "response_timeout=0ms",
        "prefix=a{b}",
        "layout=lists",
    ] {
        let err = RedisBackend::connect(&format!("{}?{bad}", redis_url()))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "{bad}: {err:?}");
    }
}

/// The prefix of the URL names the keys, and redis-rs's own options reach redis-rs: the whole
/// life of a job, wake-up included, runs over RESP3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_of_the_url_apply() {
    let prefix = fresh_prefix();
    let url = format!(
        "{}?prefix={prefix}&protocol=resp3&connect_timeout=2s&response_timeout=5s",
        redis_url()
    );
    let backend = RedisBackend::connect(&url).await.unwrap();
    assert_eq!(backend.key_prefix(), prefix);
    let wakeup = backend
        .subscribe(SubscribeParams {
            queues: vec!["q".into()],
            worker: None,
        })
        .await
        .unwrap();
    let stored = job("q", t0());
    backend
        .enqueue(EnqueueParams {
            jobs: vec![stored.clone()],
            now: t0(),
        })
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), wakeup.wait())
        .await
        .expect("woken over RESP3");
    let leased = backend
        .fetch(FetchParams {
            ended: Vec::new(),
            known: None,
            flow: Vec::new(),
            queues: vec!["q".into()],
            limit: 1,
            worker: "resp3".into(),
            lease_for: Duration::from_secs(30),
            now: t0(),
            reserve: 0,
            deliver: 0,
        })
        .await
        .unwrap();
    let items = vec![Completion {
        lease: leased[0].lease(),
        result: RawValue::from_string("7".into()).unwrap(),
    }];
    let done = backend.complete(CompleteParams { items, now: t0() }).await;
    assert_eq!(done.unwrap(), [true]);
    let record = backend.job(stored.id).await.unwrap();
    assert_eq!(record.status, JobStatus::Completed);
    assert_eq!(record.result.unwrap().get(), "7");

    let mut conn = raw_connection().await;
    let key = format!("{{{prefix}:q}}:j:{}", stored.id.0.simple());
    let exists: bool = redis::cmd("EXISTS")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(exists, "{key}");
    // The backend's connections speak RESP3, as `protocol` asked (no other test asks for it).
    let clients: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(clients.contains("resp=3"), "{clients}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_url_takes_options_too() {
    let nodes: Vec<String> = tokio::task::block_in_place(cluster_urls)
        .iter()
        .map(|u| u.trim_start_matches("redis://").to_string())
        .collect();
    let prefix = fresh_prefix();
    let url = format!("redis+cluster://{}/?prefix={prefix}", nodes.join(","));
    let backend = RedisBackend::connect(&url).await.unwrap();
    assert_eq!(backend.key_prefix(), prefix);
    let stored = job("q", t0());
    backend
        .enqueue(EnqueueParams {
            jobs: vec![stored.clone()],
            now: t0(),
        })
        .await
        .unwrap();
    assert_eq!(backend.job(stored.id).await.unwrap().id, stored.id);
}

/// A server that accepts connections but never answers: the connect timeout of the URL bounds
/// the wait.
#[tokio::test]
async fn a_silent_server_times_out_as_the_url_says() {
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let started = Instant::now();
    let err = RedisBackend::connect(&format!(
        "redis://127.0.0.1:{port}?connect_timeout=200ms&response_timeout=200ms"
    ))
    .await
    .unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    drop(silent);
}
