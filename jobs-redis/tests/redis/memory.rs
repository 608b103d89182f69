//! What a job costs in Redis memory.

use std::time::Duration;

use jobs_core::{
    Backend, CompleteParams, Completion, EnqueueParams, FetchParams, JobId, JobStatus, NewJob,
    Operations,
};
use jobs_redis::redis;
use serde_json::value::RawValue;

use crate::support::{redis_url, single_backend};

fn job(queue: &str, now: chrono::DateTime<chrono::Utc>) -> NewJob {
    NewJob {
        id: JobId::new(),
        name: "send_welcome_email".into(),
        queue: queue.into(),
        payload: RawValue::from_string(r#"{"user_id":123,"email":"alice@example.com"}"#.into())
            .unwrap(),
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

/// MEMORY USAGE of a job's hash and of its payload key.
async fn memory_usage(
    conn: &mut redis::aio::MultiplexedConnection,
    prefix: &str,
    queue: &str,
    id: JobId,
) -> (u64, u64) {
    let usage = |kind: char| {
        let mut conn = conn.clone();
        let key = format!("{{{prefix}:{queue}}}:{kind}:{}", id.0.simple());
        async move {
            redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(&key)
                .query_async::<u64>(&mut conn)
                .await
                .expect("MEMORY USAGE")
        }
    };
    (usage('j').await, usage('p').await)
}

/// A waiting job's hash and a retained completed job's hash stay small (listpack-encoded), the
/// payload beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_hash_stays_small() {
    let backend = single_backend().await;
    let prefix = backend.key_prefix().to_string();
    let client = redis::Client::open(redis_url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let now = chrono::Utc::now();

    let done = job("email", now);
    let waiting = job("email", now);
    backend
        .enqueue(EnqueueParams {
            jobs: vec![done.clone(), waiting.clone()],
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

    let waiting_bytes = memory_usage(&mut conn, &prefix, "email", waiting.id).await;
    let completed_bytes = memory_usage(&mut conn, &prefix, "email", done.id).await;
    eprintln!(
        "MEMORY USAGE (hash, payload): waiting job {waiting_bytes:?} B, completed job \
         {completed_bytes:?} B"
    );
    assert!(waiting_bytes.0 < 250, "waiting job: {waiting_bytes:?} B");
    assert!(
        completed_bytes.0 < 300,
        "completed job: {completed_bytes:?} B"
    );
    assert!(completed_bytes.1 < 200, "payload: {completed_bytes:?} B");
}
