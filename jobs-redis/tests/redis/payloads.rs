//! Where a payload lives: in its job's hash (field `p`) when at most 64 bytes, else in its own
//! key; enqueued alone or in a batch that mixes both, each job is fetched and read with its own
//! payload, and a debounce that replaces a payload moves it between the two, leaving no stale
//! copy behind.

use std::time::Duration;

use jobs_core::{Backend, Coalesce, EnqueueParams, JobId, NewJob, Operations};
use jobs_redis::{redis, RedisBackend};
use serde_json::value::RawValue;

use crate::support::{at, fetch, job, raw_connection, single_backend, t0};

/// 64 bytes: the longest payload a hash keeps.
const SHORT: &str = r#"{"user_id":123456789,"email":"someone.with.long.name@example.o"}"#;

/// 65 bytes: one too many for the hash.
const LONG: &str = r#"{"user_id":1234567890,"email":"someone.with.long.name@example.o"}"#;

/// A job of `queue` carrying `payload`.
fn carrying(queue: &str, payload: &str) -> NewJob {
    NewJob {
        payload: RawValue::from_string(payload.into()).unwrap(),
        ..job(queue, t0())
    }
}

async fn put(b: &RedisBackend, jobs: Vec<NewJob>) {
    b.enqueue(EnqueueParams { jobs, now: t0() })
        .await
        .expect("enqueue");
}

/// Where job `id` of `queue` keeps its payload: the hash's field `p` and the payload key.
async fn stored_payload(
    b: &RedisBackend,
    queue: &str,
    id: JobId,
) -> (Option<String>, Option<String>) {
    let base = format!("{{{}:{queue}}}:", b.key_prefix());
    redis::pipe()
        .hget(format!("{base}j:{}", id.0.simple()), "p")
        .get(format!("{base}p:{}", id.0.simple()))
        .query_async(&mut raw_connection().await)
        .await
        .expect("HGET and GET")
}

/// The payload as a read gives it back.
async fn read_payload(b: &RedisBackend, id: JobId) -> String {
    b.job(id).await.expect("the job").payload.get().to_string()
}

#[test]
fn the_payloads_straddle_the_limit() {
    assert_eq!((SHORT.len(), LONG.len()), (64, 65));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_payloads_live_in_the_hash_and_long_ones_apart() {
    let b = single_backend().await;
    let alone = [carrying("pq", SHORT), carrying("pq", LONG)];
    for job in &alone {
        put(&b, vec![job.clone()]).await;
    }
    // A batch alternating the two, so the fetch's payloads must be matched to their jobs.
    let batch: Vec<NewJob> = (0..6)
        .map(|n| carrying("pq", if n % 2 == 0 { LONG } else { SHORT }))
        .collect();
    put(&b, batch.clone()).await;

    let all: Vec<&NewJob> = alone.iter().chain(&batch).collect();
    for job in &all {
        let expected = if job.payload.get() == SHORT {
            (Some(SHORT.to_string()), None)
        } else {
            (None, Some(LONG.to_string()))
        };
        assert_eq!(stored_payload(&b, "pq", job.id).await, expected);
        assert_eq!(read_payload(&b, job.id).await, job.payload.get());
    }
    let leased = b.fetch(fetch(&["pq"], 10, at(1))).await.unwrap();
    assert_eq!(leased.len(), all.len());
    for leased in &leased {
        let job = all.iter().find(|j| j.id == leased.record.id).unwrap();
        assert_eq!(leased.record.payload.get(), job.payload.get());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debounce_moves_the_payload_and_leaves_no_stale_copy() {
    let b = single_backend().await;
    let debounced = |payload| NewJob {
        coalesce: Some(Coalesce::Debounce {
            key: "d".into(),
            window: Duration::from_secs(5),
        }),
        run_at: at(5_000),
        ..carrying("dq", payload)
    };
    let first = debounced(SHORT);
    put(&b, vec![first.clone()]).await;
    assert_eq!(
        stored_payload(&b, "dq", first.id).await,
        (Some(SHORT.into()), None)
    );

    put(&b, vec![debounced(LONG)]).await;
    assert_eq!(
        stored_payload(&b, "dq", first.id).await,
        (None, Some(LONG.into())),
        "a long payload replaces a short one"
    );
    assert_eq!(read_payload(&b, first.id).await, LONG);

    put(&b, vec![debounced(SHORT)]).await;
    assert_eq!(
        stored_payload(&b, "dq", first.id).await,
        (Some(SHORT.into()), None),
        "a short payload replaces a long one"
    );
    assert_eq!(read_payload(&b, first.id).await, SHORT);

    let leased = b.fetch(fetch(&["dq"], 10, at(5_000))).await.unwrap();
    assert_eq!(leased.len(), 1, "one job, folded");
    assert_eq!(
        (leased[0].record.id, leased[0].record.payload.get()),
        (first.id, SHORT)
    );
}
