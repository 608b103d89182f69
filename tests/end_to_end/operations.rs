//! The operations API through `jobs::connect(url)`, on every backend compiled in: filters and
//! tags, retry, cancel and delete one job or every job matching a filter, purge, queues, live
//! workers and cron schedules.

use std::time::Duration;

use jobs::prelude::*;
use jobs::{DeadReason, Error, ErrorKind, JobFilter, JobStatus, Operations, PageRequest, Worker};

#[job(queue = "ops", name = "ops.pay", tags = ["payments"])]
async fn pay(order: i64) -> Result<(), JobError> {
    if order < 0 {
        return Err(JobError::fatal("card declined"));
    }
    Ok(())
}

#[job(queue = "ops_keyed", name = "ops.keyed", unique = "k:{n}")]
async fn keyed(n: i64) -> Result<(), JobError> {
    Err(JobError::fatal(format!("no {n}")))
}

#[job(queue = "ops_slow", name = "ops.slow")]
async fn slow(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

#[job(
    queue = "ops_cron",
    name = "ops.nightly",
    cron = "0 3 * * *",
    tz = "Europe/Paris"
)]
async fn nightly() {}

/// Runs a worker on `queues` until every job in them has finished.
async fn run_to_the_end(backend: &jobs::AnyBackend, queues: &[&str]) {
    Worker::new(backend.clone())
        .queues(queues.iter().copied())
        .drain()
        .await
        .expect("drain");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_tags_retries_and_purges_on_every_backend() {
    for backend in super::backends().await {
        let ok = Pay::new(1).tag("order:42").enqueue(&backend).await.unwrap();
        let declined = Pay::new(-1)
            .tag("order:42")
            .enqueue(&backend)
            .await
            .unwrap();
        let other = Pay::new(2).tag("order:43").enqueue(&backend).await.unwrap();
        run_to_the_end(&backend, &["ops"]).await;

        // Every job of order 42, whatever its status; tags from the attribute and the call.
        let order_42 = JobFilter::new().tag("order:42");
        let page = backend
            .jobs(&order_42, PageRequest::default())
            .await
            .unwrap();
        let ids: Vec<_> = page.jobs.iter().map(|j| j.id).collect();
        assert_eq!(ids, [ok.id(), declined.id()]);
        assert!(page.next.is_none());
        assert_eq!(page.jobs[0].tags, ["payments", "order:42"]);

        // The dead one says why, with the kind of each attempt's error.
        let dead = JobFilter::new().queue("ops").status(JobStatus::Dead);
        let page = backend.jobs(&dead, PageRequest::default()).await.unwrap();
        assert_eq!(page.jobs.len(), 1);
        let record = &page.jobs[0];
        assert_eq!(record.dead_reason(), Some(DeadReason::Fatal));
        assert_eq!(record.errors[0].kind, ErrorKind::Fatal);
        assert_eq!(record.errors[0].message, "card declined");

        // One job: retried by hand, refused in the wrong status, unknown ids named.
        backend.retry(declined.id()).await.unwrap();
        assert_eq!(
            backend.job(declined.id()).await.unwrap().status,
            JobStatus::Pending
        );
        let refused = backend.retry(ok.id()).await.unwrap_err();
        assert!(
            matches!(
                refused,
                Error::WrongStatus {
                    status: JobStatus::Completed,
                    ..
                }
            ),
            "{refused:?}"
        );
        let missing = jobs::JobId::new();
        assert!(matches!(backend.job(missing).await, Err(Error::NotFound(id)) if id == missing));
        backend.cancel(declined.id()).await.unwrap();
        assert_eq!(
            backend.job(declined.id()).await.unwrap().status,
            JobStatus::Cancelled
        );

        // Every job matching a filter, applied by the store.
        assert_eq!(backend.retry_all(&order_42).await.unwrap(), 1);
        run_to_the_end(&backend, &["ops"]).await;
        assert_eq!(
            backend
                .delete_all(&JobFilter::new().tag("order:43"))
                .await
                .unwrap(),
            1
        );
        assert!(matches!(
            backend.job(other.id()).await,
            Err(Error::NotFound(_))
        ));

        // Queues and their counts.
        let queues = backend.queues().await.unwrap();
        let ops = queues.iter().find(|q| q.name == "ops").expect("queue ops");
        assert_eq!((ops.counts.completed, ops.counts.dead), (1, 1));

        // Purge finished jobs older than a time.
        let later = jobs::Timestamp::from(std::time::SystemTime::now() + Duration::from_secs(1));
        assert_eq!(backend.purge(JobStatus::Completed, later).await.unwrap(), 1);
        assert_eq!(backend.purge(JobStatus::Dead, later).await.unwrap(), 1);
        assert!(backend.purge(JobStatus::Pending, later).await.is_err());
        let left = backend
            .jobs(&JobFilter::new().queue("ops"), PageRequest::default())
            .await;
        assert!(left.unwrap().jobs.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_unique_key_refuses_a_retry_naming_the_holder() {
    for backend in super::backends().await {
        let first = Keyed::new(1).enqueue(&backend).await.unwrap();
        run_to_the_end(&backend, &["ops_keyed"]).await;
        let holder = Keyed::new(1).enqueue(&backend).await.unwrap();
        assert!(!holder.is_duplicate());
        match backend.retry(first.id()).await {
            Err(Error::UniqueKeyHeld {
                job,
                key,
                holder: h,
            }) => {
                assert_eq!((job, key.as_str(), h), (first.id(), "k:1", holder.id()));
            }
            other => panic!("{other:?}"),
        }
        let dead = JobFilter::new().queue("ops_keyed").status(JobStatus::Dead);
        assert_eq!(
            backend.retry_all(&dead).await.unwrap(),
            0,
            "held keys are skipped"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_workers_and_schedules_are_recorded_in_the_store() {
    for backend in super::backends().await {
        let job = Slow::new(600).enqueue(&backend).await.unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let worker = Worker::new(backend.clone())
            .queues(["ops_slow", "ops_cron"])
            .concurrency(3)
            .id("ops-worker-1");
        let running = tokio::spawn(worker.run_until(async {
            let _ = stopped.await;
        }));
        let mut seen = None;
        for _ in 0..200 {
            let workers = backend.workers().await.unwrap();
            if let Some(w) = workers.into_iter().find(|w| w.worker.id == "ops-worker-1") {
                if w.running.contains(&job.id()) {
                    seen = Some(w);
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let seen = seen.expect("the worker and its running job are listed");
        assert_eq!(seen.worker.queues, ["ops_slow", "ops_cron"]);
        assert_eq!(seen.worker.concurrency, 3);
        assert_eq!(seen.worker.pid, std::process::id());
        assert!(seen.worker.names.iter().any(|n| n == "ops.slow"));

        let schedules = backend.schedules().await.unwrap();
        let nightly = schedules
            .iter()
            .find(|s| s.schedule.name == "ops.nightly")
            .expect("the cron schedule is recorded");
        assert_eq!(
            (
                nightly.schedule.expression.as_str(),
                nightly.schedule.timezone.as_str()
            ),
            ("0 3 * * *", "Europe/Paris")
        );
        assert_eq!(nightly.next.len(), 3);
        assert!(nightly.next.windows(2).all(|w| w[0] < w[1]));

        let _ = stop.send(());
        running.await.unwrap().unwrap();
        let workers = backend.workers().await.unwrap();
        assert!(workers.iter().all(|w| w.worker.id != "ops-worker-1"));
    }
}
