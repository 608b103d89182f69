//! The flow-control keys of `#[job]`: what `key_limits()` and `coalesce()` return for sample
//! payloads, and what an enqueue through the facade stores with them (on the memory backend).

use std::time::Duration;

use jobs::prelude::*;
use jobs::{Coalesce, Job, JobStatus, KeyLimits, MemoryBackend, Rate};

const S: Duration = Duration::from_secs(1);

#[job(
    queue = "flow.sync",
    concurrency_key = "customer:{customer_id}",
    concurrency = 1,
    rate = "10/1s"
)]
async fn sync_customer(customer_id: i64, full: bool) {
    let _ = (customer_id, full);
}

/// A rate alone, over a key with no placeholder, in the bare-unit form of the grammar.
#[job(concurrency_key = "{{all}}", rate = "5/m")]
async fn call_partner_api(request: String) {
    let _ = request;
}

#[job(queue = "flow.feed", throttle = "feed:{user_id}", window = "1h")]
async fn refresh_feed(user_id: i64, reason: String) {
    let _ = (user_id, reason);
}

#[job(queue = "flow.feed", throttle = "{user_id}", window = "50ms")]
async fn ping_feed(user_id: i64) {
    let _ = user_id;
}

#[job(queue = "flow.search", debounce = "{user_id}", window = "1m 30s")]
async fn reindex_user(user_id: i64, fields: Vec<String>) {
    let _ = (user_id, fields);
}

#[test]
fn key_limits_are_formatted_from_the_payload() {
    assert_eq!(
        Job::key_limits(&SyncCustomer::new(42, true)),
        Some(KeyLimits {
            key: "customer:42".into(),
            concurrency: Some(1),
            rate: Some(Rate::new(10, S)),
        })
    );
    assert_eq!(
        Job::key_limits(&SyncCustomer::new(-7, false)).unwrap().key,
        "customer:-7"
    );
    assert_eq!(
        Job::key_limits(&CallPartnerApi::new("GET /".into())),
        Some(KeyLimits {
            key: "{all}".into(),
            concurrency: None,
            rate: Some(Rate::new(5, 60 * S)),
        })
    );
    assert_eq!(Job::coalesce(&SyncCustomer::new(42, true)), None);
    assert_eq!(Job::key_limits(&RefreshFeed::new(1, "x".into())), None);
}

#[test]
fn rates_read_as_rate_reads_them() {
    for (limits, text) in [
        (Job::key_limits(&SyncCustomer::new(1, true)), "10/1s"),
        (Job::key_limits(&CallPartnerApi::new(String::new())), "5/m"),
    ] {
        let rate = limits.unwrap().rate.unwrap();
        assert_eq!(rate, text.parse::<Rate>().unwrap(), "{text}");
        assert_eq!(rate.validate().map_err(|e| e.to_string()), Ok(()));
    }
}

#[test]
fn coalesce_is_formatted_from_the_payload() {
    assert_eq!(
        Job::coalesce(&RefreshFeed::new(7, "login".into())),
        Some(Coalesce::Throttle {
            key: "feed:7".into(),
            window: 3600 * S,
        })
    );
    assert_eq!(
        Job::coalesce(&ReindexUser::new(9, vec!["name".into()])),
        Some(Coalesce::Debounce {
            key: "9".into(),
            window: 90 * S,
        })
    );
    assert_eq!(Job::key_limits(&ReindexUser::new(9, Vec::new())), None);
}

#[tokio::test]
async fn an_enqueue_stores_the_key_limits() {
    let backend = MemoryBackend::new();
    let first = SyncCustomer::new(42, true).enqueue(&backend).await.unwrap();
    let second = SyncCustomer::new(43, false)
        .enqueue(&backend)
        .await
        .unwrap();
    assert_ne!(first.id(), second.id());
    let record = first.record(&backend).await.unwrap();
    assert_eq!(
        (&*record.queue, record.status),
        ("flow.sync", JobStatus::Pending)
    );
    assert_eq!(
        record.key_limits,
        Some(KeyLimits {
            key: "customer:42".into(),
            concurrency: Some(1),
            rate: Some(Rate::new(10, S)),
        })
    );
    let record = second.record(&backend).await.unwrap();
    assert_eq!(record.key_limits.unwrap().key, "customer:43");
    let unkeyed = RefreshFeed::new(1, "x".into())
        .enqueue(&backend)
        .await
        .unwrap();
    assert_eq!(unkeyed.record(&backend).await.unwrap().key_limits, None);
}

#[tokio::test]
async fn throttled_enqueues_within_the_window_share_one_job() {
    let backend = MemoryBackend::new();
    let kept = RefreshFeed::new(7, "login".into())
        .enqueue(&backend)
        .await
        .unwrap();
    let again = RefreshFeed::new(7, "follow".into())
        .enqueue(&backend)
        .await
        .unwrap();
    assert!(!kept.is_duplicate());
    assert!(again.is_duplicate());
    assert_eq!(again.id(), kept.id());
    let record = kept.record(&backend).await.unwrap();
    assert_eq!(record.payload.get(), r#"{"user_id":7,"reason":"login"}"#);
    let other = RefreshFeed::new(8, "login".into())
        .enqueue(&backend)
        .await
        .unwrap();
    assert!(!other.is_duplicate());
    assert_ne!(other.id(), kept.id());
}

#[tokio::test]
async fn a_throttle_key_is_free_again_after_its_window() {
    let backend = MemoryBackend::new();
    let kept = PingFeed::new(1).enqueue(&backend).await.unwrap();
    tokio::time::sleep(Duration::from_millis(80)).await;
    let next = PingFeed::new(1).enqueue(&backend).await.unwrap();
    assert!(!next.is_duplicate());
    assert_ne!(next.id(), kept.id());
}

#[tokio::test]
async fn debounced_enqueues_replace_the_waiting_job() {
    let backend = MemoryBackend::new();
    let waiting = ReindexUser::new(9, vec!["name".into()])
        .enqueue(&backend)
        .await
        .unwrap();
    let again = ReindexUser::new(9, vec!["email".into()])
        .enqueue(&backend)
        .await
        .unwrap();
    assert!(again.is_duplicate());
    assert_eq!(again.id(), waiting.id());
    let record = waiting.record(&backend).await.unwrap();
    assert_eq!(record.status, JobStatus::Scheduled);
    assert_eq!(record.payload.get(), r#"{"user_id":9,"fields":["email"]}"#);
}
