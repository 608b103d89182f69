//! Listing: each field of [`JobFilter`] as [`JobFilter::matches`] defines it, id order, and
//! paging, by the store's cursor and through [`Operations::jobs`].

use super::*;

/// Every job matching `filter`, by `Operations::jobs` a page of `limit` at a time, with the
/// number of pages it took.
async fn every_page(b: &AnyBackend, filter: &JobFilter, limit: usize) -> (Vec<JobId>, usize) {
    let (mut ids, mut pages) = (Vec::new(), 0);
    let mut request = PageRequest::default().limit(limit);
    loop {
        let page = b.jobs(filter, request).await.expect("a page of jobs");
        pages += 1;
        ids.extend(page.jobs.iter().map(|r| r.id));
        match page.next {
            Some(next) => {
                assert_eq!(page.next, ids.last().copied(), "the cursor is the last id");
                request = PageRequest::after(next).limit(limit);
            }
            None => return (ids, pages),
        }
    }
}

/// Listing pages by id after a cursor, at most `limit` at a time.
pub async fn list_pages_in_id_order(b: AnyBackend) {
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(put(&b, new_job("listed")).await);
    }
    let page = |after, limit| ListParams {
        filter: JobFilter::new(),
        after,
        limit,
    };
    let first = b.list(page(None, 2)).await.unwrap();
    let second = b.list(page(Some(first[1].id), 2)).await.unwrap();
    let third = b.list(page(Some(second[1].id), 2)).await.unwrap();
    let pages: Vec<Vec<JobId>> = [first, second, third]
        .iter()
        .map(|p| p.iter().map(|r| r.id).collect())
        .collect();
    assert_eq!(
        pages,
        vec![ids[0..2].to_vec(), ids[2..4].to_vec(), ids[4..5].to_vec()]
    );
    assert!(b.list(page(Some(ids[4]), 2)).await.unwrap().is_empty());
    let whole = b.list(page(None, 100)).await.unwrap();
    assert_eq!(whole.iter().map(|r| r.id).collect::<Vec<_>>(), ids);
    assert_eq!(value(&whole[0].payload), serde_json::json!({"n": 1}));
}

/// `queue` keeps the jobs of one queue.
pub async fn list_filters_by_queue(b: AnyBackend) {
    let mut mine = Vec::new();
    for i in 0..4 {
        let mut job = new_job("queued");
        if i % 2 == 1 {
            job.queue = OTHER_QUEUE.into();
        }
        mine.push(put(&b, job).await);
    }
    let by_queue = |queue: &str| listed(&b, JobFilter::new().queue(queue));
    assert_eq!(by_queue(QUEUE).await, vec![mine[0], mine[2]]);
    assert_eq!(by_queue(OTHER_QUEUE).await, vec![mine[1], mine[3]]);
    assert!(by_queue("conformance-none").await.is_empty());
    assert_eq!(listed(&b, JobFilter::new()).await, mine);
}

/// `status` keeps the jobs in one status, for each status.
pub async fn list_filters_by_status(b: AnyBackend) {
    let mut by_status = Vec::new();
    for (i, status) in JobStatus::ALL.into_iter().enumerate() {
        let mut job = new_job("statused");
        job.queue = format!("{QUEUE}-{i}");
        by_status.push((status, job_in(&b, job, status, at(i as i64)).await));
    }
    for (status, id) in by_status {
        let found = listed(&b, JobFilter::new().status(status)).await;
        assert_eq!(found, vec![id], "the {status} jobs");
        assert_eq!(record(&b, id).await.status, status);
    }
}

/// Listing by status follows a job through its statuses (dead, retried, leased, completed),
/// and pages by id after a cursor within a status.
pub async fn list_by_status_follows_a_job_through_its_statuses(b: AnyBackend) {
    let mut dead = Vec::new();
    for i in 0..3 {
        dead.push(job_in(&b, new_job("dies"), JobStatus::Dead, at(i)).await);
    }
    dead.sort();
    let by = |status| listed(&b, JobFilter::new().status(status));
    assert_eq!(by(JobStatus::Dead).await, dead);
    let page = ListParams {
        filter: JobFilter::new().status(JobStatus::Dead),
        after: Some(dead[0]),
        limit: 1,
    };
    let page: Vec<JobId> = b
        .list(page)
        .await
        .expect("list")
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(page, [dead[1]], "the page after the cursor");

    let revived = dead[1];
    let retried = manage_ids(&b, Action::Retry, &[revived], at(10)).await;
    assert_eq!(retried.changed, [revived]);
    assert_eq!(by(JobStatus::Dead).await, [dead[0], dead[2]]);
    assert_eq!(by(JobStatus::Pending).await, [revived]);
    let leased = fetch_one(&b, at(11)).await;
    assert_eq!(leased.record.id, revived);
    assert_eq!(by(JobStatus::Running).await, [revived]);
    assert!(by(JobStatus::Pending).await.is_empty());
    assert!(complete(&b, &leased, "null", at(12)).await);
    assert!(by(JobStatus::Running).await.is_empty());
    assert_eq!(by(JobStatus::Completed).await, [revived]);
}

/// `name` keeps the jobs of one stored name.
pub async fn list_filters_by_name(b: AnyBackend) {
    let a1 = put(&b, new_job("email.send")).await;
    let other = put(&b, new_job("email.sender")).await;
    let a2 = put(&b, new_job("email.send")).await;
    let mut elsewhere = new_job("email.send");
    elsewhere.queue = OTHER_QUEUE.into();
    let a3 = put(&b, elsewhere).await;
    assert_eq!(
        listed(&b, JobFilter::new().name("email.send")).await,
        vec![a1, a2, a3]
    );
    assert_eq!(
        listed(&b, JobFilter::new().name("email.sender")).await,
        vec![other]
    );
    assert!(listed(&b, JobFilter::new().name("email")).await.is_empty());
}

/// `tag` keeps the jobs carrying a tag, whatever their queue; a tag matches whole.
pub async fn list_filters_by_tag_across_queues(b: AnyBackend) {
    let tagged = |queue: &str, tags: &[&str]| {
        let mut job = new_job("tagged");
        job.queue = queue.to_string();
        job.tags = tags.iter().map(|t| t.to_string()).collect();
        job
    };
    let vip_order = put(&b, tagged(QUEUE, &["order:42", "vip"])).await;
    let order_mail = put(&b, tagged(OTHER_QUEUE, &["order:42"])).await;
    let other_order = put(&b, tagged(QUEUE, &["order:420", "vip"])).await;
    put(&b, tagged(OTHER_QUEUE, &[])).await;
    let by_tag = |tag: &str| listed(&b, JobFilter::new().tag(tag));
    assert_eq!(by_tag("order:42").await, vec![vip_order, order_mail]);
    assert_eq!(by_tag("vip").await, vec![vip_order, other_order]);
    assert_eq!(by_tag("order:420").await, vec![other_order]);
    assert!(by_tag("order").await.is_empty(), "no prefix matches");
    assert!(by_tag("order:4").await.is_empty());
    let in_other = JobFilter::new().tag("order:42").queue(OTHER_QUEUE);
    assert_eq!(listed(&b, in_other).await, vec![order_mail]);
}

/// `created_after` keeps jobs enqueued at or after it, `created_before` those enqueued before.
pub async fn list_filters_by_creation_time(b: AnyBackend) {
    let mut ids = Vec::new();
    for ms in [0, 1_000, 2_000] {
        ids.push(put_at(&b, new_job("created"), at(ms)).await);
    }
    let after = |ms| listed(&b, JobFilter::new().created_after(at(ms)));
    let before = |ms| listed(&b, JobFilter::new().created_before(at(ms)));
    assert_eq!(after(1_000).await, ids[1..].to_vec(), "at or after");
    assert_eq!(after(1_001).await, ids[2..].to_vec());
    assert_eq!(before(1_000).await, ids[..1].to_vec(), "strictly before");
    assert_eq!(before(1_001).await, ids[..2].to_vec());
    let between = JobFilter::new()
        .created_after(at(1_000))
        .created_before(at(2_000));
    assert_eq!(listed(&b, between).await, vec![ids[1]]);
    assert!(after(2_001).await.is_empty());
}

/// `finished_before` keeps finished jobs that finished before it, never active ones, and a
/// retried job no longer counts as finished.
pub async fn list_filters_by_finish_time(b: AnyBackend) {
    let completed = job_in(&b, new_job("finished"), JobStatus::Completed, at(1_000)).await;
    let dead = job_in(&b, new_job("finished"), JobStatus::Dead, at(2_000)).await;
    let cancelled = job_in(&b, new_job("finished"), JobStatus::Cancelled, at(3_000)).await;
    for status in [JobStatus::Scheduled, JobStatus::Pending, JobStatus::Running] {
        let mut active = new_job("active");
        active.queue = OTHER_QUEUE.into();
        job_in(&b, active, status, at(500)).await;
    }
    let before = |ms| listed(&b, JobFilter::new().finished_before(at(ms)));
    assert!(before(1_000).await.is_empty(), "strictly before");
    assert_eq!(before(1_001).await, vec![completed]);
    assert_eq!(before(3_000).await, vec![completed, dead]);
    assert_eq!(before(100_000).await, vec![completed, dead, cancelled]);

    let retried = manage_ids(&b, Action::Retry, &[dead], at(4_000)).await;
    assert_eq!(retried.changed, vec![dead]);
    assert_eq!(before(100_000).await, vec![completed, cancelled]);
}

/// Every field that is set must match.
pub async fn list_matches_every_filter_field_at_once(b: AnyBackend) {
    let mut wanted = new_job("report.build");
    wanted.tags = vec!["tenant:1".into()];
    let wanted = job_in(&b, wanted, JobStatus::Completed, at(1_000)).await;
    let mut near_misses = Vec::new();
    for miss in 0..6 {
        let mut job = new_job("report.build");
        job.tags = vec!["tenant:1".into()];
        let (mut status, mut now) = (JobStatus::Completed, at(1_000));
        match miss {
            0 => job.queue = OTHER_QUEUE.into(),
            1 => status = JobStatus::Dead,
            2 => job.name = "report.send".into(),
            3 => job.tags = vec!["tenant:2".into()],
            4 => now = at(-1),
            _ => now = at(3_000),
        }
        near_misses.push(job_in(&b, job, status, now).await);
    }
    let mut finished_late = new_job("report.build");
    finished_late.tags = vec!["tenant:1".into()];
    near_misses.push(put_at(&b, finished_late, at(1_000)).await);
    let leased = fetch_one(&b, at(1_000)).await;
    assert!(complete(&b, &leased, "null", at(5_000)).await);
    let filter = JobFilter::new()
        .queue(QUEUE)
        .status(JobStatus::Completed)
        .name("report.build")
        .tag("tenant:1")
        .created_after(at(0))
        .created_before(at(2_000))
        .finished_before(at(5_000));
    assert_eq!(listed(&b, filter.clone()).await, vec![wanted]);
    for id in &near_misses {
        assert!(
            !filter.matches(&record(&b, *id).await),
            "{id} misses one field"
        );
    }
}

/// `Operations::jobs` pages 50 jobs at a time by default; each page but the last names the
/// cursor of the next.
pub async fn list_pages_through_operations_with_a_cursor(b: AnyBackend) {
    let ids = put_many(&b, (0..120).map(|_| new_job("paged")), t0()).await;
    let every = JobFilter::new();

    let first = b.jobs(&every, PageRequest::default()).await.unwrap();
    assert_eq!(first.jobs.len(), DEFAULT_PAGE_SIZE);
    assert_eq!(first.next, Some(ids[49]));
    let (all, pages) = every_page(&b, &every, DEFAULT_PAGE_SIZE).await;
    assert_eq!((all, pages), (ids.clone(), 3));
    let (all, pages) = every_page(&b, &every, 7).await;
    assert_eq!((all, pages), (ids.clone(), 18));

    let exactly_one_page = b.jobs(&every, PageRequest::after(ids[69])).await.unwrap();
    assert_eq!(exactly_one_page.jobs.len(), 50);
    assert_eq!(exactly_one_page.next, None, "nothing after the last page");
    let none = b.jobs(&every, PageRequest::after(ids[119])).await.unwrap();
    assert!(none.jobs.is_empty() && none.next.is_none());
    let elsewhere = JobFilter::new().queue(OTHER_QUEUE);
    let empty = b.jobs(&elsewhere, PageRequest::default()).await.unwrap();
    assert!(empty.jobs.is_empty() && empty.next.is_none());
}
