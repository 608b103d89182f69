//! The stored versions in the layout on Redis Streams: waiting and running jobs counted by name
//! and version wherever they are (delayed, in any priority's stream, held by a pause, leased),
//! finished ones not, over more calls than one when the queue holds more than a call examines.

use jobs_core::{
    Backend, CompleteParams, EnqueueParams, JobStatus, Operations, PauseParams, StoredVersion,
    StoredVersionsParams,
};

use crate::streams::{done, ready, store};
use crate::support::{at, fetch, t0};

#[tokio::test]
async fn waiting_and_running_jobs_are_counted_by_name_and_version() {
    let (_prefix, backend) = store().await;
    let versioned = |version: u32| {
        let mut job = ready("s");
        job.version = version;
        job
    };
    let enqueue = |jobs: Vec<jobs_core::NewJob>| backend.enqueue(EnqueueParams { jobs, now: t0() });
    // Leased then completed: not counted. Leased: counted while it runs.
    enqueue(vec![versioned(1), versioned(1)]).await.unwrap();
    let got = backend.fetch(fetch(&["s"], 2, at(1))).await.unwrap();
    let finished = CompleteParams {
        items: vec![done(got[0].lease())],
        now: at(2),
    };
    assert_eq!(backend.complete(finished).await.unwrap(), [true]);
    // 2,500 pending of version 2 (more than one call examines), a scheduled one, one of
    // another priority, one of another name, and one cancelled (not counted).
    enqueue((0..2_500).map(|_| versioned(2)).collect())
        .await
        .unwrap();
    let mut scheduled = versioned(3);
    scheduled.run_at = at(3_600_000);
    let mut urgent = versioned(3);
    urgent.priority = 1;
    let mut other = versioned(1);
    other.name = "other".into();
    let cancelled = versioned(4);
    let cancelled_id = cancelled.id;
    enqueue(vec![scheduled, urgent, other, cancelled])
        .await
        .unwrap();
    backend.cancel(cancelled_id).await.unwrap();
    // Held back by a pause: still waiting.
    backend
        .pause(PauseParams {
            queue: "s".into(),
            paused: true,
        })
        .await
        .unwrap();
    enqueue(vec![versioned(5)]).await.unwrap();
    assert_eq!(
        backend
            .read(jobs_core::ReadParams {
                id: got[1].record.id
            })
            .await
            .unwrap()
            .unwrap()
            .status,
        JobStatus::Running
    );

    let counted = backend
        .stored_versions(StoredVersionsParams {
            names: vec!["layout".into()],
        })
        .await
        .unwrap();
    let expected = [(1, 1), (2, 2_500), (3, 2), (5, 1)].map(|(version, jobs)| StoredVersion {
        name: "layout".into(),
        version,
        jobs,
    });
    assert_eq!(counted, expected);
}
