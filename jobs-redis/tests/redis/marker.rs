//! The store's layout marker: a store gets the name of this release's layout, keeps it, and a
//! store named otherwise is refused before anything is stored or changed in it.

use jobs_core::{Backend, EnqueueParams, Error, Operations};
use jobs_redis::redis::aio::MultiplexedConnection;
use jobs_redis::{redis, RedisBackend};

use crate::support::{fresh_prefix, job, keys_like, raw_connection, redis_url, t0};

/// The URL of the single server under `prefix`.
fn url_of(prefix: &str) -> String {
    let base = redis_url();
    let separator = if base.contains('?') { '&' } else { '?' };
    format!("{base}{separator}prefix={prefix}")
}

/// The layout `prefix`'s store is named with, if any.
async fn marker(conn: &mut MultiplexedConnection, prefix: &str) -> Option<String> {
    redis::cmd("GET")
        .arg(format!("{{{prefix}}}:layout"))
        .query_async(conn)
        .await
        .expect("GET")
}

async fn name_store(conn: &mut MultiplexedConnection, prefix: &str, layout: &str) {
    redis::cmd("SET")
        .arg(format!("{{{prefix}}}:layout"))
        .arg(layout)
        .query_async::<()>(conn)
        .await
        .expect("SET");
}

async fn enqueue_one(backend: &RedisBackend) -> Result<jobs_core::JobId, Error> {
    let new = job("marked", t0());
    let id = new.id;
    backend
        .enqueue(EnqueueParams {
            jobs: vec![new],
            now: t0(),
        })
        .await?;
    Ok(id)
}

/// The message of an error that must be `Invalid`.
fn invalid(err: Error) -> String {
    match err {
        Error::Invalid(message) => message,
        other => panic!("an Invalid error, not {other:?}"),
    }
}

#[tokio::test]
async fn a_new_store_is_named_on_connect_and_keeps_its_name() {
    let prefix = fresh_prefix();
    let mut conn = raw_connection().await;
    assert_eq!(marker(&mut conn, &prefix).await, None);
    let backend = RedisBackend::connect(&url_of(&prefix)).await.unwrap();
    assert_eq!(marker(&mut conn, &prefix).await.as_deref(), Some("hash"));
    let id = enqueue_one(&backend).await.unwrap();

    // A store written before names existed: its jobs read as before, and it gets the name.
    let deleted: u32 = redis::cmd("DEL")
        .arg(format!("{{{prefix}}}:layout"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    let later = RedisBackend::connect(&url_of(&prefix)).await.unwrap();
    assert_eq!(later.job(id).await.unwrap().id, id);
    assert_eq!(marker(&mut conn, &prefix).await.as_deref(), Some("hash"));
}

#[tokio::test]
async fn a_store_of_another_layout_is_refused_on_connect() {
    let prefix = fresh_prefix();
    let mut conn = raw_connection().await;
    name_store(&mut conn, &prefix, "streams").await;

    let message = invalid(RedisBackend::connect(&url_of(&prefix)).await.unwrap_err());
    assert!(message.contains(&format!("prefix `{prefix}`")), "{message}");
    assert!(message.contains("laid out as `streams`"), "{message}");
    assert!(message.contains("reads the layout `hash`"), "{message}");
    assert_eq!(marker(&mut conn, &prefix).await.as_deref(), Some("streams"));
    assert_eq!(
        keys_like(&mut conn, &prefix, "*").await,
        vec![format!("{{{prefix}}}:layout")],
        "nothing else is written"
    );
}

#[tokio::test]
async fn a_backend_given_its_prefix_later_is_refused_at_its_first_call_and_each_after() {
    let prefix = fresh_prefix();
    let mut conn = raw_connection().await;
    name_store(&mut conn, &prefix, "streams").await;
    let backend = RedisBackend::connect(&redis_url())
        .await
        .unwrap()
        .prefix(&prefix)
        .unwrap();

    let message = invalid(enqueue_one(&backend).await.unwrap_err());
    assert!(message.contains("laid out as `streams`"), "{message}");
    let message = invalid(backend.queues().await.unwrap_err());
    assert!(message.contains("laid out as `streams`"), "{message}");
    assert_eq!(
        keys_like(&mut conn, &prefix, "*").await,
        vec![format!("{{{prefix}}}:layout")],
        "nothing is stored"
    );

    // Once the store is named as this release reads it, the same backend works.
    name_store(&mut conn, &prefix, "hash").await;
    let id = enqueue_one(&backend).await.unwrap();
    assert_eq!(backend.job(id).await.unwrap().id, id);
}
