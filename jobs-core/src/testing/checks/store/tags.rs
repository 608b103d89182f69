//! Tags: stored as enqueued, kept through a job's life, forgotten with the job.

use super::*;
use crate::testing::Echo;

/// Tags given per enqueue read back in the order given, without repeats, and stay with the job
/// through its attempts.
pub async fn tags_read_back_as_enqueued(b: AnyBackend) {
    let handle = Echo { n: 1 }
        .tag("order:42")
        .tag("customer:7")
        .tag("order:42")
        .run_at(t0())
        .enqueue(&b)
        .await
        .unwrap();
    let tags = || vec!["order:42".to_string(), "customer:7".to_string()];
    assert_eq!(record(&b, handle.id()).await.tags, tags());
    let batch = Echo::enqueue_many(&b, (0..3).map(|n| Echo { n }.tag(format!("batch:{n}"))))
        .await
        .unwrap();
    for (n, handle) in batch.iter().enumerate() {
        assert_eq!(
            record(&b, handle.id()).await.tags,
            vec![format!("batch:{n}")]
        );
    }

    let leased = fetch(&b, 10, t0()).await;
    let first = leased.iter().find(|j| j.record.id == handle.id()).unwrap();
    assert_eq!(first.record.tags, tags(), "a leased job carries its tags");
    assert!(fail(&b, first, "again", None, at(1)).await);
    let retried = manage_ids(&b, Action::Retry, &[handle.id()], at(2)).await;
    assert_eq!(retried.changed, vec![handle.id()]);
    let again = fetch_one(&b, at(3)).await;
    assert!(complete(&b, &again, "2", at(4)).await);
    assert_eq!(record(&b, handle.id()).await.tags, tags());
    let found = listed(&b, JobFilter::new().tag("customer:7")).await;
    assert_eq!(found, vec![handle.id()]);
}

/// A deleted or pruned job is gone from the tag filters, and a new job of the tag is found
/// alone.
pub async fn tags_forget_deleted_and_pruned_jobs(b: AnyBackend) {
    let tagged = |queue: &str| {
        let mut job = new_job("tagged");
        job.queue = queue.to_string();
        job.tags = vec!["order:1".into(), "shared".into()];
        job
    };
    let by_tag = |tag: &'static str| listed(&b, JobFilter::new().tag(tag));
    let pruned = job_in(&b, tagged(QUEUE), JobStatus::Completed, at(1)).await;
    let deleted = put(&b, tagged(QUEUE)).await;
    let bulk_deleted = put(&b, tagged(OTHER_QUEUE)).await;
    let mut bystander = new_job("tagged");
    bystander.tags = vec!["shared".into()];
    let bystander = put(&b, bystander).await;
    assert_eq!(by_tag("order:1").await, vec![pruned, deleted, bulk_deleted]);

    let prune = PruneParams {
        queue: QUEUE.into(),
        keep_count: Some(0),
        finished_before: None,
        limit: 100,
        now: at(10),
    };
    assert_eq!(b.prune(prune).await.unwrap(), 1);
    assert_eq!(by_tag("order:1").await, vec![deleted, bulk_deleted]);
    let gone = manage_ids(&b, Action::Delete, &[deleted], at(11)).await;
    assert_eq!(gone.changed, vec![deleted]);
    assert_eq!(by_tag("order:1").await, vec![bulk_deleted]);
    let filter = JobFilter::new().tag("order:1");
    assert_eq!(b.delete_all(&filter).await.unwrap(), 1);
    assert!(by_tag("order:1").await.is_empty());
    let page = b.jobs(&filter, PageRequest::default()).await.unwrap();
    assert!(page.jobs.is_empty() && page.next.is_none());
    assert_eq!(by_tag("shared").await, vec![bystander]);

    let fresh = put_at(&b, tagged(QUEUE), at(20)).await;
    assert_eq!(by_tag("order:1").await, vec![fresh]);
}
