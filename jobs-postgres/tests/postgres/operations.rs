//! The operations' statements: listing by every filter field with a cursor, retry / cancel /
//! delete by ids or by filter in batches, and the queues' names.

use std::time::Duration;

use jobs_core::{
    Action, Backend, CompleteParams, Completion, ErrorKind, ErrorReport, FailParams, Failure,
    HeldKey, JobFilter, JobId, JobRecord, JobStatus, LeasedJob, ListParams, ManageParams, Managed,
    PruneParams, QueueNamesParams, ReadParams, Target,
};
use jobs_postgres::PgBackend;

use jobs_core::JobExt;

use crate::support::{at, fetch, fresh_backend, new_job, put, t0, Record};

async fn complete(backend: &PgBackend, leased: &LeasedJob, now_ms: i64) {
    let result = serde_json::value::to_raw_value(&1).unwrap();
    let items = vec![Completion {
        lease: leased.lease(),
        result,
    }];
    let accepted = backend
        .complete(CompleteParams {
            items,
            now: at(now_ms),
        })
        .await
        .unwrap();
    assert_eq!(accepted, [true]);
}

async fn kill(backend: &PgBackend, leased: &LeasedJob, now_ms: i64) {
    let items = vec![Failure {
        lease: leased.lease(),
        error: ErrorReport::new(ErrorKind::Fatal, "no"),
        retry_at: None,
    }];
    let accepted = backend
        .fail(FailParams {
            items,
            now: at(now_ms),
        })
        .await
        .unwrap();
    assert_eq!(accepted, [true]);
}

async fn manage(backend: &PgBackend, action: Action, target: Target, limit: usize) -> Managed {
    backend
        .manage(ManageParams {
            action,
            target,
            limit,
            now: at(50_000),
        })
        .await
        .expect("manage")
}

async fn read(backend: &PgBackend, id: JobId) -> Option<JobRecord> {
    backend.read(ReadParams { id }).await.expect("read")
}

/// Every job matching `filter`, a page of `limit` at a time, following the cursor.
async fn list_all(backend: &PgBackend, filter: &JobFilter, limit: usize) -> Vec<JobId> {
    let mut ids = Vec::new();
    let mut after = None;
    loop {
        let page = backend
            .list(ListParams {
                filter: filter.clone(),
                after,
                limit,
            })
            .await
            .expect("list");
        assert!(page.len() <= limit);
        ids.extend(page.iter().map(|r| r.id));
        match page.last() {
            Some(last) if page.len() == limit => after = Some(last.id),
            _ => return ids,
        }
    }
}

/// Twelve jobs over two queues, three names, two tags and twelve seconds, some of them
/// completed, dead, cancelled or running.
async fn varied_jobs(backend: &PgBackend) {
    for i in 0..12i64 {
        let mut job = new_job(["x", "y", "z"][i as usize % 3], ["a", "b"][i as usize % 2]);
        job.tags = match i % 4 {
            0 => vec!["t1".into()],
            1 => vec!["t1".into(), "t2".into()],
            _ => Vec::new(),
        };
        put(backend, vec![job], at(i * 1000)).await;
    }
    let leased = fetch(backend, "a", 3, 20_000).await;
    complete(backend, &leased[0], 21_000).await;
    complete(backend, &leased[1], 21_000).await;
    kill(backend, &leased[2], 22_000).await;
    let b = list_all(backend, &JobFilter::new().queue("b"), 100).await;
    let cancelled = manage(backend, Action::Cancel, Target::Ids(vec![b[0]]), 1).await;
    assert_eq!(cancelled.changed, [b[0]]);
    assert_eq!(fetch(backend, "b", 1, 24_000).await.len(), 1);
}

#[tokio::test]
async fn list_applies_every_filter_field_and_pages_by_cursor() {
    let backend = fresh_backend().await;
    varied_jobs(&backend).await;
    let all = backend
        .list(ListParams {
            filter: JobFilter::new(),
            after: None,
            limit: 100,
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 12);
    assert!(all.windows(2).all(|w| w[0].id < w[1].id), "in id order");
    let filters = [
        JobFilter::new().queue("a"),
        JobFilter::new().status(JobStatus::Pending),
        JobFilter::new().status(JobStatus::Completed),
        JobFilter::new().status(JobStatus::Cancelled),
        JobFilter::new().status(JobStatus::Running),
        JobFilter::new().name("y"),
        JobFilter::new().tag("t1"),
        JobFilter::new().tag("t2"),
        JobFilter::new().tag("none"),
        JobFilter::new().created_after(at(5_000)),
        JobFilter::new().created_before(at(5_000)),
        JobFilter::new().finished_before(at(22_000)),
        JobFilter::new().finished_before(at(30_000)),
        JobFilter::new()
            .queue("b")
            .tag("t1")
            .created_after(at(2_000))
            .created_before(at(10_000)),
        JobFilter::new().status(JobStatus::Dead).name("x").tag("t1"),
    ];
    for filter in filters {
        let expected: Vec<JobId> = all
            .iter()
            .filter(|r| filter.matches(r))
            .map(|r| r.id)
            .collect();
        assert_eq!(list_all(&backend, &filter, 2).await, expected, "{filter:?}");
    }
    let some = |filter: JobFilter| all.iter().filter(move |r| filter.matches(r)).count();
    assert_eq!(some(JobFilter::new().tag("t1")), 6);
    assert_eq!(some(JobFilter::new().finished_before(at(22_000))), 2);
    assert_eq!(some(JobFilter::new().status(JobStatus::Dead)), 1);
    assert_eq!(some(JobFilter::new().status(JobStatus::Running)), 1);
}

#[tokio::test]
async fn retry_by_ids_resets_dead_jobs_and_reports_held_keys() {
    let backend = fresh_backend().await;
    // `old` died holding key `k`; `holder` now holds it while active.
    let mut old = new_job("r", "q");
    old.unique_key = Some("k".into());
    put(&backend, vec![old.clone()], t0()).await;
    kill(&backend, &fetch(&backend, "q", 1, 1_000).await[0], 2_000).await;
    let mut holder = new_job("r", "q");
    holder.unique_key = Some("k".into());
    put(&backend, vec![holder.clone()], at(3_000)).await;
    // `first` and `second` both died holding key `k2`, which no active job holds.
    let mut first = new_job("r", "q2");
    first.unique_key = Some("k2".into());
    put(&backend, vec![first.clone()], t0()).await;
    kill(&backend, &fetch(&backend, "q2", 1, 1_000).await[0], 2_000).await;
    let mut second = first.clone();
    second.id = JobId::new();
    put(&backend, vec![second.clone()], at(3_000)).await;
    kill(&backend, &fetch(&backend, "q2", 1, 4_000).await[0], 5_000).await;
    // A dead job without a key, a pending one, and one that does not exist.
    let plain = new_job("r", "q3");
    put(&backend, vec![plain.clone()], t0()).await;
    kill(&backend, &fetch(&backend, "q3", 1, 1_000).await[0], 2_000).await;
    let pending = new_job("r", "q3");
    put(&backend, vec![pending.clone()], t0()).await;

    let ids = vec![
        old.id,
        first.id,
        second.id,
        plain.id,
        pending.id,
        JobId::new(),
    ];
    let managed = manage(&backend, Action::Retry, Target::Ids(ids), 1).await;
    let mut changed = managed.changed.clone();
    changed.sort();
    let mut expected = vec![first.id, plain.id];
    expected.sort();
    assert_eq!(changed, expected);
    let mut held = managed.held.clone();
    held.sort_by_key(|h| h.job);
    let mut expected_held = vec![
        HeldKey {
            job: old.id,
            key: "k".into(),
            holder: holder.id,
        },
        HeldKey {
            job: second.id,
            key: "k2".into(),
            holder: first.id,
        },
    ];
    expected_held.sort_by_key(|h| h.job);
    assert_eq!(held, expected_held);
    assert_eq!(managed.last, None);

    let retried = read(&backend, plain.id).await.unwrap();
    assert_eq!(retried.status, JobStatus::Pending);
    assert_eq!(retried.attempt, 0);
    assert_eq!(retried.run_at, at(50_000));
    assert_eq!(retried.finished_at, None);
    assert_eq!(retried.errors.len(), 1, "the error history is kept");
    assert_eq!(
        read(&backend, old.id).await.unwrap().status,
        JobStatus::Dead
    );
    assert_eq!(
        read(&backend, second.id).await.unwrap().status,
        JobStatus::Dead
    );
    assert_eq!(read(&backend, pending.id).await.unwrap().run_at, t0());
    // The retried job is ready again.
    assert_eq!(fetch(&backend, "q3", 5, 50_000).await.len(), 2);
}

#[tokio::test]
async fn cancel_revokes_leases_and_delete_removes_jobs_of_any_status() {
    let backend = fresh_backend().await;
    let ids = put(&backend, (0..4).map(|_| new_job("c", "q")).collect(), t0()).await;
    let leased = fetch(&backend, "q", 2, 1_000).await;
    complete(&backend, &leased[0], 2_000).await;
    // ids[0] completed, ids[1] running, ids[2] and ids[3] pending.
    let managed = manage(&backend, Action::Cancel, Target::Ids(ids.clone()), 1).await;
    assert_eq!(managed.changed, ids[1..].to_vec());
    let late = backend
        .complete(CompleteParams {
            items: vec![Completion {
                lease: leased[1].lease(),
                result: serde_json::value::to_raw_value(&1).unwrap(),
            }],
            now: at(60_000),
        })
        .await
        .unwrap();
    assert_eq!(late, [false], "the cancelled job's lease was revoked");
    let cancelled = read(&backend, ids[1]).await.unwrap();
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    assert_eq!(cancelled.lease, None);
    assert_eq!(cancelled.finished_at, Some(at(50_000)));
    assert_eq!(
        read(&backend, ids[0]).await.unwrap().status,
        JobStatus::Completed
    );

    let deleted = manage(&backend, Action::Delete, Target::Ids(ids[..3].to_vec()), 1).await;
    assert_eq!(deleted.changed, ids[..3].to_vec());
    for id in &ids[..3] {
        assert!(read(&backend, *id).await.is_none());
    }
    assert!(read(&backend, ids[3]).await.is_some());
}

#[tokio::test]
async fn manage_by_filter_works_in_batches_after_a_cursor() {
    let backend = fresh_backend().await;
    let dead = put(&backend, (0..25).map(|_| new_job("m", "q")).collect(), t0()).await;
    for leased in fetch(&backend, "q", 25, 1_000).await {
        kill(&backend, &leased, 2_000).await;
    }
    let pending = put(&backend, (0..5).map(|_| new_job("m", "q")).collect(), t0()).await;
    let filter = JobFilter::new().queue("q").status(JobStatus::Dead);
    let mut after = None;
    let mut batches = Vec::new();
    loop {
        let target = Target::Matching {
            filter: filter.clone(),
            after,
        };
        let managed = manage(&backend, Action::Retry, target, 10).await;
        batches.push(managed.changed.len());
        match managed.last {
            Some(last) => {
                assert_eq!(Some(&last), managed.changed.last());
                after = Some(last);
            }
            None => break,
        }
    }
    assert_eq!(batches, [10, 10, 5]);
    let retried = list_all(&backend, &JobFilter::new().status(JobStatus::Pending), 100).await;
    let mut expected = [dead, pending].concat();
    expected.sort();
    assert_eq!(retried, expected);

    // A full last batch says where to go on; the next finds nothing and ends.
    let everything = Target::Matching {
        filter: JobFilter::new().queue("q"),
        after: None,
    };
    let first = manage(&backend, Action::Delete, everything, 30).await;
    assert_eq!(first.changed.len(), 30);
    let rest = Target::Matching {
        filter: JobFilter::new().queue("q"),
        after: first.last,
    };
    assert_eq!(
        manage(&backend, Action::Delete, rest, 30).await,
        Managed::default()
    );
}

#[tokio::test]
async fn queue_names_cover_every_status_and_queues_emptied_by_deletes() {
    let backend = fresh_backend().await;
    for queue in [
        "pending",
        "running",
        "completed",
        "dead",
        "Zed",
        "deleted",
        "pruned",
    ] {
        put(&backend, vec![new_job("n", queue)], t0()).await;
    }
    let mut later = new_job("n", "scheduled");
    later.run_at = at(3_600_000);
    put(&backend, vec![later], t0()).await;
    fetch(&backend, "running", 1, 1_000).await;
    complete(
        &backend,
        &fetch(&backend, "completed", 1, 1_000).await[0],
        2_000,
    )
    .await;
    kill(&backend, &fetch(&backend, "dead", 1, 1_000).await[0], 2_000).await;
    let doomed = list_all(&backend, &JobFilter::new().queue("deleted"), 10).await;
    manage(&backend, Action::Delete, Target::Ids(doomed), 1).await;
    complete(
        &backend,
        &fetch(&backend, "pruned", 1, 1_000).await[0],
        2_000,
    )
    .await;
    let pruned = backend
        .prune(PruneParams {
            queue: "pruned".into(),
            keep_count: Some(0),
            finished_before: None,
            limit: 10,
            now: at(3_000),
        })
        .await
        .unwrap();
    assert_eq!(pruned, 1);
    let names = backend.queue_names(QueueNamesParams {}).await.unwrap();
    let mut expected = vec![
        "Zed",
        "completed",
        "dead",
        "deleted",
        "pending",
        "pruned",
        "running",
        "scheduled",
    ];
    expected.sort_unstable();
    assert_eq!(names, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_racing_an_enqueue_for_its_key_reports_the_key_held() {
    let backend = fresh_backend().await;
    let mut dead = new_job("record", "record");
    dead.unique_key = Some("k".into());
    put(&backend, vec![dead.clone()], t0()).await;
    kill(
        &backend,
        &fetch(&backend, "record", 1, 1_000).await[0],
        2_000,
    )
    .await;
    // An enqueue of the key, not yet committed when the retry starts.
    let mut tx = backend.pool().begin().await.unwrap();
    let holder = Record::new(1)
        .unique("k")
        .enqueue(backend.on(&mut tx))
        .await
        .unwrap();
    let retrying = tokio::spawn({
        let backend = backend.clone();
        async move { manage(&backend, Action::Retry, Target::Ids(vec![dead.id]), 1).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    tx.commit().await.unwrap();
    let managed = retrying.await.unwrap();
    assert_eq!(managed.changed, []);
    assert_eq!(
        managed.held,
        [HeldKey {
            job: dead.id,
            key: "k".into(),
            holder: holder.id(),
        }]
    );
}
