//! Liveness: a worker's hold on the store ends when its holder lets go (as when its process
//! dies), the store then names the worker gone, and a rescue takes that worker's jobs at once.

use super::*;

/// Waits until `liveness` stands: the backend's task took the hold.
async fn until_held(liveness: &Liveness) {
    poll_until(
        "the hold stands",
        Duration::from_secs(10),
        Duration::from_millis(10),
        || async { liveness.held_for().is_some() },
    )
    .await;
}

/// Holds stand while kept; a hold let go names its worker gone (and no other), until the
/// worker is forgotten.
pub async fn liveness_ends_when_its_holder_lets_go(b: AnyBackend) {
    let hold = |worker: &str| {
        b.hold_liveness(HoldParams {
            worker: worker.to_string(),
        })
    };
    let kept = hold("kept").await.expect("hold");
    let dropped = hold("dropped").await.expect("hold");
    until_held(&kept).await;
    until_held(&dropped).await;
    let gone = || async { b.gone_workers(GoneParams {}).await.expect("gone workers") };
    assert!(gone().await.is_empty(), "no hold has ended");

    drop(dropped);
    poll_until(
        "the dropped hold is seen gone",
        Duration::from_secs(10),
        Duration::from_millis(10),
        || async { !gone().await.is_empty() },
    )
    .await;
    assert_eq!(gone().await, vec!["dropped".to_string()]);
    b.deregister(DeregisterParams {
        worker: "dropped".into(),
    })
    .await
    .expect("deregister");
    assert!(gone().await.is_empty(), "a forgotten worker is not gone");
    assert!(kept.held_for().is_some());
}

/// A rescue of gone workers takes every job they hold, whatever their leases, recording that
/// the worker is gone, and keeps each job's place; other workers' jobs stay running, and the
/// gone worker's late writes are refused.
pub async fn rescue_takes_the_jobs_of_gone_workers_at_once(b: AnyBackend) {
    let mut ids = Vec::new();
    for n in 0..3 {
        let mut job = new_job("held");
        job.run_at = at(n * 10 - 30);
        ids.push(put(&b, job).await);
    }
    let mut by_gone = fetch_params(&[QUEUE], 2, t0());
    by_gone.worker = "gone".into();
    let gone_jobs = b.fetch(by_gone).await.expect("fetch");
    assert_eq!(gone_jobs.len(), 2);
    let kept = fetch_one(&b, t0()).await;

    // Well within every lease.
    let rescued = b
        .rescue(RescueParams {
            target: RescueTarget::Workers(vec!["gone".into(), "unheard-of".into()]),
            now: at(1_000),
            limit: 10,
            error: ErrorReport::worker_gone(),
        })
        .await
        .expect("rescue");
    let mut rescued_sorted = rescued.clone();
    rescued_sorted.sort();
    assert_eq!(rescued_sorted, vec![ids[0], ids[1]]);
    for &id in &ids[..2] {
        let r = read(&b, id).await.expect("stored");
        assert_eq!((r.status, r.attempt), (JobStatus::Pending, 1));
        assert!(r.lease.is_none());
        let place = if id == ids[0] { -30 } else { -20 };
        assert_eq!(r.run_at, at(place), "keeps its place");
        let error = r.errors.last().expect("the lost attempt's error");
        assert_eq!(
            (error.attempt, error.kind, error.message.as_str()),
            (
                1,
                ErrorKind::LeaseLost,
                ErrorReport::worker_gone().message.as_str()
            )
        );
    }
    assert_eq!(
        read(&b, kept.record.id).await.expect("stored").status,
        JobStatus::Running,
        "another worker's job is not taken"
    );
    assert!(
        !complete(&b, &gone_jobs[0], "\"late\"", at(1_500)).await,
        "the gone worker's late completion is refused"
    );
    let again = fetch(&b, 10, at(2_000)).await;
    let again: Vec<JobId> = again.iter().map(|j| j.record.id).collect();
    assert_eq!(
        again,
        vec![ids[0], ids[1]],
        "both run again, in their order"
    );
}
