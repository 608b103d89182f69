//! A queue's counts stay exact, compared with a `GROUP BY` count of the table, through every
//! statement that changes jobs: the check any cheaper way of counting must pass.

use std::time::Duration;

use jobs_core::{
    Action, Backend, CountsParams, ErrorKind, ErrorReport, FailParams, Failure, FetchParams,
    JobFilter, LeasedJob, ManageParams, Operations, ProgressParams, PruneParams, QueueCounts,
    Release, ReleaseParams, RenewParams, RescueParams, RescueTarget, Target,
};
use jobs_postgres::PgBackend;

use crate::support::{at, complete, fetch, fresh_backend, new_job, put, t0};

/// The counts the backend answers for `queue`.
async fn kept(backend: &PgBackend, queue: &str) -> QueueCounts {
    backend
        .counts(CountsParams {
            queue: queue.into(),
        })
        .await
        .expect("counts")
}

/// The counts of `queue` counted from the table itself.
async fn counted(backend: &PgBackend, queue: &str) -> QueueCounts {
    let rows: Vec<(String, i64)> = sqlx::query_as(&format!(
        "SELECT status, count(*) FROM \"{}\".jobs WHERE queue = $1 GROUP BY status",
        backend.schema_name()
    ))
    .bind(queue)
    .fetch_all(backend.pool())
    .await
    .expect("count the table");
    let mut counts = QueueCounts::default();
    for (status, n) in rows {
        *counts.get_mut(status.parse().expect("a status")) = n as u64;
    }
    counts
}

/// Asserts that both queues' kept counts are the table's, and returns queue `c`'s.
async fn exact(backend: &PgBackend, step: &str) -> QueueCounts {
    for queue in ["c", "d"] {
        assert_eq!(
            kept(backend, queue).await,
            counted(backend, queue).await,
            "queue {queue} after {step}"
        );
    }
    kept(backend, "c").await
}

/// Fails each job, to a retry at `retry_at_ms` or (`None`) to dead.
async fn fail(backend: &PgBackend, leased: &[LeasedJob], retry_at_ms: Option<i64>, now_ms: i64) {
    let items = leased
        .iter()
        .map(|j| Failure {
            lease: j.lease(),
            error: ErrorReport::new(ErrorKind::Fatal, "no"),
            retry_at: retry_at_ms.map(at),
        })
        .collect();
    let accepted = backend
        .fail(FailParams {
            items,
            now: at(now_ms),
        })
        .await
        .expect("fail");
    assert!(accepted.iter().all(|a| *a), "every failure accepted");
}

fn in_queue(queue: &str) -> JobFilter {
    JobFilter::new().queue(queue)
}

#[tokio::test]
async fn counts_stay_exact_through_every_kind_of_write() {
    let backend = fresh_backend().await;
    let mut jobs: Vec<_> = (0..10).map(|_| new_job("e", "c")).collect();
    jobs[9].run_at = at(3_600_000);
    let mut keyed = new_job("e", "c");
    keyed.unique_key = Some("k".into());
    jobs.push(keyed.clone());
    jobs.extend((0..3).map(|_| new_job("e", "d")));
    put(&backend, jobs, t0()).await;
    let c = exact(&backend, "enqueue").await;
    assert_eq!((c.pending, c.scheduled), (10, 1));
    // A duplicate unique key inserts nothing.
    keyed.id = jobs_core::JobId::new();
    put(&backend, vec![keyed], t0()).await;
    assert_eq!(exact(&backend, "a deduplicated enqueue").await.pending, 10);

    let leased = fetch(&backend, "c", 8, 1_000).await;
    assert_eq!(exact(&backend, "fetch").await.running, 8);
    assert_eq!(complete(&backend, &leased[..3], 2_000).await, [true; 3]);
    assert_eq!(exact(&backend, "complete").await.completed, 3);
    // A repeated completion rewrites completed rows as they are.
    assert_eq!(complete(&backend, &leased[..1], 2_500).await, [true]);
    assert_eq!(exact(&backend, "a repeated completion").await.completed, 3);
    fail(&backend, &leased[3..5], None, 3_000).await;
    fail(&backend, &leased[5..6], Some(4_000), 3_000).await;
    let c = exact(&backend, "fail").await;
    assert_eq!((c.dead, c.running, c.pending), (2, 2, 3));

    // Writes that keep the status: renew, progress, release of a running job (back to pending).
    backend
        .renew(RenewParams {
            items: leased[6..8].iter().map(LeasedJob::lease).collect(),
            expires_at: at(120_000),
            now: at(5_000),
        })
        .await
        .expect("renew");
    backend
        .progress(ProgressParams {
            lease: leased[6].lease(),
            progress: 50,
            now: at(5_000),
        })
        .await
        .expect("progress");
    exact(&backend, "renew and progress").await;
    backend
        .release(ReleaseParams {
            items: vec![Release {
                lease: leased[7].lease(),
                run_at: None,
            }],
            now: at(5_000),
        })
        .await
        .expect("release");
    assert_eq!(exact(&backend, "release").await.running, 1);

    backend.retry(leased[3].record.id).await.expect("retry");
    assert_eq!(exact(&backend, "retry").await.dead, 1);
    backend.cancel(leased[6].record.id).await.expect("cancel");
    assert_eq!(
        exact(&backend, "cancel of a running job").await.cancelled,
        1
    );
    backend.delete(leased[4].record.id).await.expect("delete");
    assert_eq!(exact(&backend, "delete").await.dead, 0);

    // Lapsed leases rescued (back to pending, or dead when out of attempts).
    let mut last = new_job("e", "c");
    last.max_attempts = 1;
    put(&backend, vec![last], t0()).await;
    let short = backend
        .fetch(FetchParams {
            ended: Vec::new(),
            known: None,
            queues: vec!["c".into()],
            limit: 2,
            worker: "w".into(),
            lease_for: Duration::from_secs(1),
            now: at(6_000),
            flow: Vec::new(),
            reserve: 0,
            deliver: 0,
        })
        .await
        .expect("fetch");
    assert_eq!(short.len(), 2);
    let rescued = backend
        .rescue(RescueParams {
            target: RescueTarget::Lapsed,
            now: at(60_000),
            limit: 10,
            error: ErrorReport::lease_expired(),
        })
        .await
        .expect("rescue");
    assert_eq!(rescued.len(), 2);
    exact(&backend, "rescue").await;

    let pruned = backend
        .prune(PruneParams {
            queue: "c".into(),
            keep_count: Some(1),
            finished_before: None,
            limit: 100,
            now: at(70_000),
        })
        .await
        .expect("prune");
    assert_eq!(pruned, 3, "two of three completed and the cancelled one");
    exact(&backend, "prune").await;

    // Bulk management by filter, in batches smaller than the set.
    let managed = backend
        .manage(ManageParams {
            action: Action::Cancel,
            target: Target::Matching {
                filter: in_queue("c"),
                after: None,
            },
            limit: 100,
            now: at(80_000),
        })
        .await
        .expect("bulk cancel");
    assert!(!managed.changed.is_empty());
    let c = exact(&backend, "a bulk cancel").await;
    assert_eq!(c.pending + c.scheduled + c.running, 0);
    assert_eq!(
        backend.retry_all(&in_queue("c")).await.expect("retry all"),
        7
    );
    assert_eq!(exact(&backend, "a bulk retry").await.pending, 7);
    assert_eq!(
        backend
            .delete_all(&in_queue("d"))
            .await
            .expect("delete all"),
        3
    );
    assert_eq!(exact(&backend, "a bulk delete").await.pending, 7);
    assert_eq!(kept(&backend, "d").await, QueueCounts::default());

    // TRUNCATE bypasses the statements that keep `finished_counts`; its trigger empties the
    // table with `jobs`.
    sqlx::query(&format!("TRUNCATE \"{}\".jobs", backend.schema_name()))
        .execute(backend.pool())
        .await
        .expect("truncate");
    assert_eq!(exact(&backend, "a truncate").await, QueueCounts::default());
}

/// Writers of one queue at once: each batch of completions sent twice at the same time under
/// the same leases (a retried batch whose first reply was lost), cancels, deletes of jobs being
/// completed, retries of jobs being cancelled, and prunes folding the counts meanwhile. The
/// counts stay exact, and no job is counted twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn counts_stay_exact_under_concurrent_writers() {
    let backend = fresh_backend().await;
    let ids = put(
        &backend,
        (0..200).map(|_| new_job("e", "c")).collect(),
        t0(),
    )
    .await;
    let leased = fetch(&backend, "c", 120, 1_000).await;
    let running: std::collections::HashSet<_> = leased.iter().map(|j| j.record.id).collect();
    let waiting: Vec<_> = ids.into_iter().filter(|id| !running.contains(id)).collect();
    assert_eq!(waiting.len(), 80);

    let mut tasks = tokio::task::JoinSet::new();
    for chunk in leased.chunks(10) {
        for _ in 0..2 {
            let (b, chunk) = (backend.clone(), chunk.to_vec());
            tasks.spawn(async move {
                complete(&b, &chunk, 2_000).await;
            });
        }
    }
    for id in leased[..20].iter().map(|j| j.record.id) {
        let b = backend.clone();
        tasks.spawn(async move {
            // A prune may have removed the completed job first.
            match b.delete(id).await {
                Ok(_) | Err(jobs_core::Error::NotFound(_)) => {}
                Err(e) => panic!("delete: {e}"),
            }
        });
    }
    for &id in &waiting[..40] {
        let b = backend.clone();
        tasks.spawn(async move {
            b.cancel(id).await.expect("cancel");
            if id.0.as_u128() % 2 == 0 {
                // A prune may have removed the cancelled job first.
                match b.retry(id).await {
                    Ok(_) | Err(jobs_core::Error::NotFound(_)) => {}
                    Err(e) => panic!("retry: {e}"),
                }
            }
        });
    }
    for _ in 0..3 {
        let b = backend.clone();
        tasks.spawn(async move {
            b.prune(PruneParams {
                queue: "c".into(),
                keep_count: Some(50),
                finished_before: None,
                limit: 100,
                now: at(3_000),
            })
            .await
            .expect("prune");
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("a writer");
    }
    let c = exact(&backend, "concurrent writes").await;
    assert!(c.completed + c.cancelled >= 50, "{c:?}");

    // A last prune folds what the others left: one row per status.
    backend
        .prune(PruneParams {
            queue: "c".into(),
            keep_count: Some(50),
            finished_before: None,
            limit: 1_000,
            now: at(4_000),
        })
        .await
        .expect("prune");
    let c = exact(&backend, "a last prune").await;
    assert_eq!(c.completed + c.cancelled, 50);
    let rows: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM \"{}\".finished_counts WHERE queue = 'c'",
        backend.schema_name()
    ))
    .fetch_one(backend.pool())
    .await
    .expect("count the delta rows");
    let statuses = [c.completed, c.cancelled]
        .iter()
        .filter(|n| **n > 0)
        .count();
    assert_eq!(rows, statuses as i64, "one row per status after a fold");
}
