//! Batch writes that name the same jobs at once, on different connections, never deadlock: a
//! worker renews all its leases while its completion batches are written, and an operator sets
//! a queue's concurrency, which marks its running jobs, meanwhile.

use jobs_core::{Backend as _, LeaseRef, LeasedJob, QueueLimits, RenewParams, SetLimitsParams};
use jobs_postgres::PgBackend;

use crate::support::{at, complete, fetch, fresh_backend, new_job, put};

/// Renews `leases` at `now_ms` for another minute; an error (a deadlock) fails the test.
async fn renew(backend: &PgBackend, leases: Vec<LeaseRef>, now_ms: i64) -> Vec<bool> {
    backend
        .renew(RenewParams {
            items: leases,
            expires_at: at(now_ms + 60_000),
            now: at(now_ms),
        })
        .await
        .expect("a renewal that does not deadlock")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_naming_the_same_jobs_in_opposite_orders_both_go_through() {
    const JOBS: usize = 300;
    let backend = fresh_backend().await;
    put(
        &backend,
        (0..JOBS).map(|_| new_job("held", "locks")).collect(),
        at(0),
    )
    .await;
    let mut leased: Vec<LeasedJob> = fetch(&backend, "locks", JOBS, 0).await;
    assert_eq!(leased.len(), JOBS);
    // Two renewals of every lease at once, in opposite orders: each locks its rows one by one,
    // so sent in those orders they would each wait for the other's half.
    for round in 1..=20 {
        let forward: Vec<LeaseRef> = leased.iter().map(LeasedJob::lease).collect();
        let backward: Vec<LeaseRef> = forward.iter().rev().copied().collect();
        let (a, b) = tokio::join!(
            renew(&backend, forward, round),
            renew(&backend, backward, round)
        );
        assert!(a.iter().chain(&b).all(|&renewed| renewed), "round {round}");
    }
    // A completion of every job beside a renewal of them all in the opposite order.
    leased.reverse();
    let forward: Vec<LeaseRef> = leased.iter().rev().map(LeasedJob::lease).collect();
    let (completed, _) = tokio::join!(
        complete(&backend, &leased, 30),
        renew(&backend, forward, 30)
    );
    assert!(completed.iter().all(|&done| done));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setting_a_concurrency_beside_a_renewal_of_the_queues_jobs_both_go_through() {
    const JOBS: usize = 200;
    let backend = fresh_backend().await;
    for round in 0..10 {
        let queue = format!("locks{round}");
        // Stored with falling ids, so that the table holds them in the opposite order of the
        // renewal's.
        let mut jobs: Vec<_> = (0..JOBS).map(|_| new_job("held", &queue)).collect();
        jobs.reverse();
        put(&backend, jobs, at(0)).await;
        let leased = fetch(&backend, &queue, JOBS, 0).await;
        assert_eq!(leased.len(), JOBS);
        let leases: Vec<LeaseRef> = leased.iter().map(LeasedJob::lease).collect();
        let (set, renewed) = tokio::join!(
            backend.set_limits(SetLimitsParams {
                queue: queue.clone(),
                limits: QueueLimits::default().concurrency(1_000),
            }),
            renew(&backend, leases, 1)
        );
        set.expect("setting the limit does not deadlock");
        assert!(renewed.iter().all(|&r| r), "round {round}");
    }
}
