//! `jobs::connect` on bad input: a bad URL or option is `Invalid`, an unreachable server is
//! `Connect`, on every backend compiled in.

use std::time::{Duration, Instant};

#[track_caller]
fn assert_invalid(result: Result<jobs::AnyBackend, jobs::Error>, needle: &str) {
    match result {
        Err(jobs::Error::Invalid(text)) => assert!(text.contains(needle), "{text}"),
        Err(other) => panic!("not Invalid: {other:?}"),
        Ok(_) => panic!("connected"),
    }
}

#[tokio::test]
async fn unknown_url_options_are_invalid() {
    assert_invalid(jobs::connect("memory://?pool_size=3").await, "`pool_size`");
    #[cfg(feature = "postgres")]
    assert_invalid(
        jobs::connect("postgres://postgres@127.0.0.1:5432/test?shema=x").await,
        "unknown option `shema`",
    );
    #[cfg(feature = "redis")]
    assert_invalid(
        jobs::connect("redis://127.0.0.1:6379?prefx=x").await,
        "unknown option `prefx`",
    );
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn a_malformed_redis_url_is_invalid_not_an_outage() {
    let err = jobs::connect("redis://127.0.0.1:notaport")
        .await
        .unwrap_err();
    assert!(matches!(err, jobs::Error::Invalid(_)), "{err:?}");
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_malformed_postgres_url_is_invalid() {
    let err = jobs::connect("postgres://127.0.0.1:notaport/test")
        .await
        .unwrap_err();
    assert!(matches!(err, jobs::Error::Invalid(_)), "{err:?}");
}

/// A port nothing listens on: refused at once, reported as an outage, quickly (the bound is
/// loose: it only tells "fails fast" from "retries for seconds").
#[tokio::test]
async fn a_refused_connection_is_connect_and_fails_fast() {
    #[allow(unused_mut)]
    let mut urls: Vec<&str> = Vec::new();
    #[cfg(feature = "postgres")]
    urls.push("postgres://postgres@127.0.0.1:1/test");
    #[cfg(feature = "redis")]
    urls.push("redis://127.0.0.1:1");
    for url in urls {
        let started = Instant::now();
        let err = jobs::connect(url).await.unwrap_err();
        assert!(matches!(err, jobs::Error::Connect { .. }), "{url}: {err:?}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{url}: took {:?}",
            started.elapsed()
        );
    }
}
