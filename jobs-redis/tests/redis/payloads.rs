//! Where a payload lives: in its job's hash when it fits in two values of at most 64 bytes
//! (field `p`, or cut between characters into `p` and `p2`), else in its own key; enqueued
//! alone or in a batch that mixes them, each job is fetched and read with its own payload, and
//! a debounce that replaces a payload moves it between the places, leaving no stale copy behind.

use std::time::Duration;

use jobs_core::{Backend, Coalesce, EnqueueParams, JobId, NewJob, Operations};
use jobs_redis::{redis, RedisBackend};
use serde_json::value::RawValue;

use crate::support::{at, fetch, job, raw_connection, single_backend, t0};

/// 64 bytes: the longest payload kept in one field.
const SHORT: &str = r#"{"user_id":123456789,"email":"someone.with.long.name@example.o"}"#;

/// 97 bytes: cut in two.
const MEDIUM: &str = r#"{"user_id":123456789,"email":"someone.with.long.name@example.org","template":"welcome-to-a-shop"}"#;

/// 129 bytes: too long for two fields.
const LONG: &str = r#"{"user_id":123456789,"email":"someone.with.long.name@example.org","template":"welcome-2","locale":"en-GB","campaign":"autumn-20"}"#;

/// 89 bytes whose 65th byte is the second of `é`'s two: the cut falls before the `é`.
const ACCENTED: &str =
    r#"{"user_id":12345678,"email":"someone.with.long.nm@ex.org","n":"é and more text to fill"}"#;

/// 128 bytes whose cut moves back before an `é`, leaving 65 for the rest: its own key.
const ACCENTED_LONG: &str = r#"{"user_id":12345678,"email":"someone.with.long.nm@ex.org","n":"é and more text to fill it up to 128 bytes, all in all, exact."}"#;

/// Where each payload is expected: its parts in `p` and `p2`, or in its key.
fn expected(payload: &str) -> Stored {
    match payload {
        SHORT => (Some(SHORT.into()), None, None),
        MEDIUM => (Some(MEDIUM[..64].into()), Some(MEDIUM[64..].into()), None),
        ACCENTED => (
            Some(ACCENTED[..63].into()),
            Some(ACCENTED[63..].into()),
            None,
        ),
        other => (None, None, Some(other.into())),
    }
}

/// A job's payload as stored: fields `p` and `p2` and the payload key.
type Stored = (Option<String>, Option<String>, Option<String>);

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

/// Where job `id` of `queue` keeps its payload.
async fn stored_payload(b: &RedisBackend, queue: &str, id: JobId) -> Stored {
    let base = format!("{{{}:{queue}}}:", b.key_prefix());
    let job = format!("{base}j:{}", id.0.simple());
    redis::pipe()
        .hget(&job, "p")
        .hget(&job, "p2")
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
fn the_payloads_straddle_the_limits() {
    let lengths = [SHORT, MEDIUM, LONG, ACCENTED, ACCENTED_LONG].map(str::len);
    assert_eq!(lengths, [64, 97, 129, 89, 128]);
    assert!(!ACCENTED.is_char_boundary(64) && ACCENTED.is_char_boundary(63));
    assert!(!ACCENTED_LONG.is_char_boundary(64) && ACCENTED_LONG.is_char_boundary(63));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_live_in_the_hash_when_they_fit_and_apart_when_not() {
    let b = single_backend().await;
    let sizes = [SHORT, MEDIUM, LONG, ACCENTED, ACCENTED_LONG];
    let alone = sizes.map(|payload| carrying("pq", payload));
    for job in &alone {
        put(&b, vec![job.clone()]).await;
    }
    // A batch mixing them, so the fetch's payloads must be matched to their jobs.
    let batch: Vec<NewJob> = (0..10)
        .map(|n| carrying("pq", sizes[n % sizes.len()]))
        .collect();
    put(&b, batch.clone()).await;

    let all: Vec<&NewJob> = alone.iter().chain(&batch).collect();
    for job in &all {
        let payload = job.payload.get();
        assert_eq!(stored_payload(&b, "pq", job.id).await, expected(payload));
        assert_eq!(read_payload(&b, job.id).await, payload);
    }
    let leased = b.fetch(fetch(&["pq"], 20, at(1))).await.unwrap();
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
    assert_eq!(stored_payload(&b, "dq", first.id).await, expected(SHORT));

    // Every move between one field, two fields and the key, each way.
    for payload in [MEDIUM, LONG, SHORT, LONG, MEDIUM, SHORT, ACCENTED] {
        put(&b, vec![debounced(payload)]).await;
        assert_eq!(
            stored_payload(&b, "dq", first.id).await,
            expected(payload),
            "after folding in {payload}"
        );
        assert_eq!(read_payload(&b, first.id).await, payload);
    }

    let leased = b.fetch(fetch(&["dq"], 10, at(5_000))).await.unwrap();
    assert_eq!(leased.len(), 1, "one job, folded");
    assert_eq!(
        (leased[0].record.id, leased[0].record.payload.get()),
        (first.id, ACCENTED)
    );
}
