//! Tag indexes kept in step with the jobs: `{prefix:queue}:tag:<tag>` holds the ids of the
//! queue's live jobs carrying the tag, and prune, delete and bulk delete take a job's entries
//! out with it.

use std::time::Duration;

use jobs_core::{
    Action, Backend, CompleteParams, Completion, EnqueueParams, FetchParams, JobFilter, JobId,
    ManageParams, NewJob, Operations, PruneParams, Target,
};
use jobs_redis::{redis, RedisBackend};
use serde_json::value::RawValue;

use crate::support::{job, keys_like, raw_connection, single_backend, t0};

fn tagged(queue: &str, tags: &[&str]) -> NewJob {
    NewJob {
        tags: tags.iter().map(|t| t.to_string()).collect(),
        ..job(queue, t0())
    }
}

fn stored(id: JobId) -> String {
    id.0.simple().to_string()
}

/// The ids in the index of `tag` in `queue`.
async fn index(
    conn: &mut redis::aio::MultiplexedConnection,
    b: &RedisBackend,
    queue: &str,
    tag: &str,
) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg(format!("{{{}:{queue}}}:tag:{tag}", b.key_prefix()))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tag_indexes_hold_only_live_jobs() {
    let b = single_backend().await;
    let mut conn = raw_connection().await;
    let jobs = vec![
        tagged("t", &["order:1", "vip"]),
        tagged("t", &["order:1"]),
        tagged("t", &["order:2"]),
        tagged("t", &[]),
        tagged("u", &["order:1"]),
    ];
    let ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
    b.enqueue(EnqueueParams { jobs, now: t0() }).await.unwrap();
    assert_eq!(
        index(&mut conn, &b, "t", "order:1").await,
        [stored(ids[0]), stored(ids[1])]
    );
    assert_eq!(index(&mut conn, &b, "u", "order:1").await, [stored(ids[4])]);
    let untagged: bool = redis::cmd("HEXISTS")
        .arg(format!("{{{}:t}}:j:{}", b.key_prefix(), stored(ids[3])))
        .arg("tg")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(!untagged, "a job without tags stores no tag field");
    let listed = b
        .jobs(&JobFilter::new().tag("order:1"), Default::default())
        .await;
    let listed: Vec<JobId> = listed.unwrap().jobs.iter().map(|r| r.id).collect();
    assert_eq!(listed, [ids[0], ids[1], ids[4]]);

    // Pruned: the first job, completed.
    let leased = b
        .fetch(FetchParams {
            ended: Vec::new(),
            known: None,
            flow: Vec::new(),
            queues: vec!["t".into()],
            limit: 1,
            worker: "tags".into(),
            lease_for: Duration::from_secs(30),
            now: t0(),
            reserve: 0,
            deliver: 0,
        })
        .await
        .unwrap();
    assert_eq!(leased[0].record.id, ids[0]);
    let items = vec![Completion {
        lease: leased[0].lease(),
        result: RawValue::from_string("null".into()).unwrap(),
    }];
    b.complete(CompleteParams { items, now: t0() })
        .await
        .unwrap();
    let prune = PruneParams {
        queue: "t".into(),
        keep_count: Some(0),
        finished_before: None,
        limit: 10,
        now: t0(),
    };
    assert_eq!(b.prune(prune).await.unwrap(), 1);
    assert_eq!(index(&mut conn, &b, "t", "order:1").await, [stored(ids[1])]);
    assert!(index(&mut conn, &b, "t", "vip").await.is_empty());

    // Deleted by id, then in bulk by tag (in every queue).
    let by_id = ManageParams {
        action: Action::Delete,
        target: Target::Ids(vec![ids[1]]),
        limit: 1,
        now: t0(),
    };
    assert_eq!(b.manage(by_id).await.unwrap().changed, [ids[1]]);
    assert_eq!(
        b.delete_all(&JobFilter::new().tag("order:2"))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        b.delete_all(&JobFilter::new().tag("order:1"))
            .await
            .unwrap(),
        1
    );

    let prefix = b.key_prefix();
    assert!(
        keys_like(&mut conn, prefix, ":*}:tag:*").await.is_empty(),
        "no index outlives its jobs"
    );
    for id in [ids[0], ids[1], ids[2], ids[4]] {
        let left = keys_like(&mut conn, prefix, &format!(":*}}:?:{}", stored(id))).await;
        assert!(left.is_empty(), "{id}: {left:?}");
    }
    let kept = b.jobs(&JobFilter::new(), Default::default()).await.unwrap();
    assert_eq!(kept.jobs.iter().map(|r| r.id).collect::<Vec<_>>(), [ids[3]]);
}
