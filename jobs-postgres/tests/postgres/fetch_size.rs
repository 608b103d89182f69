//! How many jobs one fetch leases: a worker draining a backlog of fast jobs asks PostgreSQL for
//! up to 1,024 at once (`PgBackend::max_fetch`), beyond the 256 of the trait's default.

use std::time::Duration;

use jobs_core::{Backend, CountsParams, JobExt, Worker};

use crate::support::{fresh_backend, Record};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_of_fast_jobs_is_fetched_up_to_a_thousand_at_once() {
    let backend = fresh_backend().await;
    assert_eq!(backend.max_fetch(), 1024);
    let n = 6000;
    Record::enqueue_many(&backend, (0..n).map(Record::new))
        .await
        .expect("enqueue");
    let worker = Worker::new(backend.clone()).queues(["record"]).cron(false);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(worker.run_until(async {
        let _ = stopped.await;
    }));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let counts = backend
            .counts(CountsParams {
                queue: "record".into(),
            })
            .await
            .expect("counts");
        if counts.completed == n {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{counts:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = stop.send(());
    running.await.expect("worker task").expect("worker");
    // A fetch starts every job it leases at the fetch's own time.
    let largest: i64 = sqlx::query_scalar(&format!(
        "SELECT max(n) FROM (SELECT count(*) AS n FROM \"{}\".jobs GROUP BY started_at) f",
        backend.schema_name()
    ))
    .fetch_one(backend.pool())
    .await
    .expect("largest fetch");
    assert!(
        (257..=1024).contains(&largest),
        "the largest fetch leased {largest} jobs"
    );
}
