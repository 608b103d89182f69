//! The library of functions the backend runs on: a fresh server gets it with the first call,
//! and a server that lost it (`FUNCTION FLUSH`, as a restart without persistence does) gets it
//! again, the call that found it missing answered as if nothing had happened.

use jobs_core::{Backend, EnqueueParams, Operations};
use jobs_redis::RedisBackend;

use crate::support::{fetch, job, redis_cli, t0, Server};

/// The names of the libraries the server on `port` holds.
fn libraries(port: u16) -> Vec<String> {
    let listed = redis_cli(port, &["FUNCTION", "LIST"]);
    let lines: Vec<&str> = listed.lines().collect();
    lines
        .windows(2)
        .filter(|pair| pair[0] == "library_name")
        .map(|pair| pair[1].to_string())
        .collect()
}

async fn enqueue_one(backend: &RedisBackend) -> jobs_core::JobId {
    let new = job("fq", t0());
    let id = new.id;
    let stored = backend
        .enqueue(EnqueueParams {
            jobs: vec![new],
            now: t0(),
        })
        .await
        .expect("the enqueue succeeds");
    assert_eq!(stored.len(), 1);
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_is_loaded_when_missing_and_again_when_lost() {
    let server = Server::start();
    assert!(libraries(server.port).is_empty(), "a fresh server");
    let backend = RedisBackend::connect(&server.url()).await.unwrap();

    let first = enqueue_one(&backend).await;
    let loaded = libraries(server.port);
    let [name] = &loaded[..] else {
        panic!("one library: {loaded:?}");
    };
    assert!(name.starts_with("jobs_"), "{name}");

    assert_eq!(redis_cli(server.port, &["FUNCTION", "FLUSH"]).trim(), "OK");
    assert!(libraries(server.port).is_empty());
    let second = enqueue_one(&backend).await;
    assert_eq!(libraries(server.port), loaded, "the same library, again");

    // A second process of the same release calls the library as it stands.
    let other = RedisBackend::connect(&server.url()).await.unwrap();
    let leased = other.fetch(fetch(&["fq"], 10, t0())).await.unwrap();
    let mut ids: Vec<_> = leased.iter().map(|j| j.record.id).collect();
    ids.sort_unstable();
    let mut expected = vec![first, second];
    expected.sort_unstable();
    assert_eq!(ids, expected, "both jobs were stored, and lease");
    assert_eq!(libraries(server.port), loaded);
    assert!(backend.job(first).await.is_ok());
}
