//! Pruning: finished jobs kept by count and age, dead ones kept until deleted.

use super::*;

/// Pruning keeps the newest finished jobs by count and age, never touches dead ones, and
/// removes at most `limit` per call.
pub async fn prune_keeps_by_count_and_age(b: AnyBackend) {
    let mut finished = Vec::new();
    for i in 1..=5 {
        let id = put(&b, new_job("pruned")).await;
        let got = fetch_one(&b, at(i)).await;
        assert!(complete(&b, &got, "null", at(i * 1_000)).await);
        finished.push(id);
    }
    let mut doomed = new_job("pruned");
    doomed.max_attempts = 1;
    let dead = put(&b, doomed).await;
    let got = fetch_one(&b, at(5_500)).await;
    assert!(fail(&b, &got, "x", None, at(5_600)).await);
    let cancelled = put(&b, new_job("pruned")).await;
    let cancel = manage_ids(&b, Action::Cancel, &[cancelled], at(6_000)).await;
    assert_eq!(cancel.changed, vec![cancelled]);

    let prune = |keep_count, finished_before, limit| PruneParams {
        queue: QUEUE.into(),
        keep_count,
        finished_before,
        limit,
        now: at(7_000),
    };
    assert_eq!(
        b.prune(prune(Some(2), None, 1)).await.unwrap(),
        1,
        "limit respected"
    );
    assert_eq!(b.prune(prune(Some(2), None, 100)).await.unwrap(), 3);
    assert!(read(&b, finished[3]).await.is_none());
    assert!(read(&b, finished[4]).await.is_some());
    assert_eq!(b.prune(prune(None, Some(at(5_500)), 100)).await.unwrap(), 1);
    assert!(read(&b, finished[4]).await.is_none());
    assert!(read(&b, cancelled).await.is_some());
    assert!(
        read(&b, dead).await.is_some(),
        "dead jobs stay until deleted"
    );
    let c = counts(&b).await;
    assert_eq!((c.completed, c.cancelled, c.dead), (0, 1, 1));
    assert_eq!(b.prune(prune(Some(0), None, 100)).await.unwrap(), 1);
    assert_eq!(b.prune(prune(Some(0), None, 100)).await.unwrap(), 0);
}
