//! What a job costs in Redis memory.

use std::time::Duration;

use jobs_core::{
    Backend, CompleteParams, Completion, EnqueueParams, FetchParams, JobId, JobStatus, NewJob,
    Operations,
};
use jobs_redis::redis;
use serde_json::value::RawValue;

use crate::support::{redis_url, single_backend};

/// A payload of 43 bytes: short enough for the job's hash.
const SHORT: &str = r#"{"user_id":123,"email":"alice@example.com"}"#;

/// A payload of 104 bytes: longer than a hash value may be, so the hash holds it in two.
const MEDIUM: &str = r#"{"user_id":123,"email":"alice@example.com","template":"welcome","locale":"en-GB","campaign":"autumn"}"#;

/// A payload of 145 bytes: too long for the hash, so it lives in its own key.
const LONG: &str = r#"{"user_id":123,"email":"alice@example.com","template":"welcome","locale":"en-GB","campaign":"autumn","referrer":"https://example.com/newsletter"}"#;

fn job(queue: &str, now: chrono::DateTime<chrono::Utc>, payload: &str) -> NewJob {
    NewJob {
        id: JobId::new(),
        name: "send_welcome_email".into(),
        queue: queue.into(),
        payload: RawValue::from_string(payload.into()).unwrap(),
        version: 1,
        priority: 10,
        run_at: now,
        max_attempts: 5,
        backoff: jobs_core::Backoff::exponential(Duration::from_secs(1)),
        timeout: None,
        unique_key: None,
        trace_context: None,
        tags: Vec::new(),
        key_limits: None,
        coalesce: None,
        step: None,
    }
}

/// What a job takes in Redis: MEMORY USAGE of its hash and of its payload key (`None`: no
/// such key, the payload is in the hash), and the hash's encoding.
#[derive(Debug)]
struct Usage {
    hash: u64,
    payload_key: Option<u64>,
    encoding: String,
}

async fn memory_usage(
    conn: &mut redis::aio::MultiplexedConnection,
    prefix: &str,
    queue: &str,
    id: JobId,
) -> Usage {
    let key = |kind: char| format!("{{{prefix}:{queue}}}:{kind}:{}", id.0.simple());
    let (hash, payload_key, encoding): (u64, Option<u64>, String) = redis::pipe()
        .cmd("MEMORY")
        .arg("USAGE")
        .arg(key('j'))
        .cmd("MEMORY")
        .arg("USAGE")
        .arg(key('p'))
        .cmd("OBJECT")
        .arg("ENCODING")
        .arg(key('j'))
        .query_async(conn)
        .await
        .expect("MEMORY USAGE");
    Usage {
        hash,
        payload_key,
        encoding,
    }
}

/// A waiting job's hash and a retained completed job's hash stay small (listpack-encoded), a
/// payload of up to two values inside, a longer one beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_hash_stays_small() {
    let backend = single_backend().await;
    let prefix = backend.key_prefix().to_string();
    let client = redis::Client::open(redis_url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let now = chrono::Utc::now();

    let done = job("email", now, SHORT);
    let waiting = job("email", now, SHORT);
    let medium = job("email", now, MEDIUM);
    let long = job("email", now, LONG);
    backend
        .enqueue(EnqueueParams {
            jobs: vec![done.clone(), waiting.clone(), medium.clone(), long.clone()],
            now,
        })
        .await
        .unwrap();
    let leased = backend
        .fetch(FetchParams {
            ended: Vec::new(),
            known: None,
            flow: Vec::new(),
            queues: vec!["email".into()],
            limit: 1,
            worker: "12345-abcdef12".into(),
            lease_for: Duration::from_secs(5),
            now,
            reserve: 0,
            deliver: 0,
        })
        .await
        .unwrap();
    assert_eq!(leased[0].record.id, done.id);
    let completion = Completion {
        lease: leased[0].lease(),
        result: RawValue::from_string(r#"{"sent_at":"2026-01-01T00:00:00Z"}"#.into()).unwrap(),
    };
    let accepted = backend
        .complete(CompleteParams {
            items: vec![completion],
            now,
        })
        .await
        .unwrap();
    assert_eq!(accepted, vec![true]);
    assert_eq!(
        backend.job(done.id).await.unwrap().status,
        JobStatus::Completed
    );

    let waiting = memory_usage(&mut conn, &prefix, "email", waiting.id).await;
    let completed = memory_usage(&mut conn, &prefix, "email", done.id).await;
    let medium = memory_usage(&mut conn, &prefix, "email", medium.id).await;
    let long = memory_usage(&mut conn, &prefix, "email", long.id).await;
    eprintln!(
        "MEMORY USAGE: waiting job {waiting:?}, completed job {completed:?}, \
         medium {medium:?}, long {long:?}"
    );
    for usage in [&waiting, &completed, &medium, &long] {
        assert_eq!(usage.encoding, "listpack", "{usage:?}");
    }
    let keys = [&waiting, &completed, &medium].map(|u| u.payload_key);
    assert_eq!(keys, [None, None, None], "payloads in their hashes");
    assert!(waiting.hash < 300, "waiting job: {waiting:?}");
    assert!(completed.hash < 400, "completed job: {completed:?}");
    assert!(medium.hash < 350, "waiting job, medium payload: {medium:?}");
    assert!(long.hash < 250, "waiting job, long payload: {long:?}");
    assert!(matches!(long.payload_key, Some(b) if b < 300), "{long:?}");
}
