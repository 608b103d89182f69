//! A worker and payload versions: it upgrades a job stored at an older version before running
//! it, leaves one stored at a newer version waiting, refuses to start when a stored version has
//! no path of upgrades, and publishes its types to the catalog.

use std::time::Duration;

use crate::testing::jobs::*;
use crate::testing::support::*;
use crate::*;

/// A job of `J`'s name stored at `version` with `payload`.
fn stored<J: Job>(payload: &str, version: u32) -> NewJob {
    let mut job = new_job(J::NAME);
    job.payload = json(payload);
    job.version = version;
    job.max_attempts = 1;
    job.run_at = real_now();
    job
}

/// A job stored at version 1 runs upgraded on a worker of version 2, at its first attempt; one
/// stored at version 3 stays pending, untouched, for a newer worker.
pub async fn worker_upgrades_a_job_stored_at_an_older_version(b: AnyBackend) {
    let old = put_at(&b, stored::<Versioned>(r#"{"count":3}"#, 1), real_now()).await;
    let current = stored::<Versioned>(r#"{"n":4,"label":"current"}"#, 2);
    let current = put_at(&b, current, real_now()).await;
    let newer = put_at(&b, stored::<Versioned>(r#"{"n":5,"x":1}"#, 3), real_now()).await;
    let running = Running::start(worker(&b).register::<Versioned>());
    for (id, want) in [(old, "upgraded:3"), (current, "current:4")] {
        let r = wait_for(&b, id, "the job completes", |r| r.status.is_finished()).await;
        assert_eq!(r.status, JobStatus::Completed, "{:?}", r.errors);
        assert_eq!(value(r.result.as_ref().unwrap()), serde_json::json!(want));
        assert_eq!((r.attempt, r.version), (1, id_version(id, old)));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = record(&b, newer).await;
    assert_eq!(
        (r.status, r.attempt, r.errors.len()),
        (JobStatus::Pending, 0, 0),
        "a job of a newer version waits for a newer worker"
    );
    running.stop().await.unwrap();
}

/// The stored version of the check's jobs: the upgraded one keeps its version 1.
fn id_version(id: JobId, old: JobId) -> u32 {
    if id == old {
        1
    } else {
        2
    }
}

/// A worker refuses to start while a waiting job is stored at a version no chain of upgrades
/// leads up from, naming the job, the version and the missing step; a version with a path is
/// no obstacle.
pub async fn worker_refuses_to_start_without_an_upgrade_path(b: AnyBackend) {
    let reachable = put_at(&b, stored::<Unreachable>(r#"{"n":2}"#, 2), real_now()).await;
    let running = Running::start(worker(&b).register::<Unreachable>());
    let r = wait_for(&b, reachable, "the job completes", |r| {
        r.status.is_finished()
    })
    .await;
    assert_eq!(r.status, JobStatus::Completed, "{:?}", r.errors);
    running.stop().await.unwrap();

    put_at(&b, stored::<Unreachable>(r#"{"n":1}"#, 1), real_now()).await;
    put_at(&b, stored::<Unreachable>(r#"{"n":1}"#, 1), real_now()).await;
    let refused = worker(&b)
        .register::<Unreachable>()
        .run_until(async {})
        .await;
    let Err(Error::Start(problems)) = refused else {
        panic!("the worker started: {refused:?}");
    };
    assert_eq!(
        problems,
        vec![StartProblem::NoUpgradePath {
            job: Unreachable::NAME.to_string(),
            stored: 1,
            jobs: 2,
            missing: 1,
            current: 3,
        }]
    );
    let text = Error::Start(problems).to_string();
    assert!(
        text.contains(
            "job `conformance.unreachable`: 2 waiting or running jobs are stored at version 1"
        ) && text.contains("`#[job_upgrade(from = 1)]`"),
        "{text}"
    );
}

/// A starting worker publishes each of its types to the catalog, with its version, defaults
/// and schema; [`Operations::enqueue_json`] enqueues by name after checking the schema, and
/// refuses a payload that does not match, storing nothing.
pub async fn worker_publishes_its_types_for_enqueues_by_name(b: AnyBackend) {
    let running = Running::start(worker(&b).register::<Versioned>().register::<Echo>());
    // The worker publishes every type it knows: these two, and any the test binary registers.
    let ours = || async {
        let catalog = b.catalog().await.unwrap();
        let ours = catalog
            .into_iter()
            .filter(|t| t.info.name.starts_with("conformance."));
        let names = ours.map(|t| (t.info.name, t.info.version));
        names.collect::<Vec<_>>()
    };
    let published = poll_until(
        "the worker publishes its types",
        Duration::from_secs(10),
        Duration::from_millis(10),
        || async { ours().await.len() == 2 },
    );
    published.await;
    let want = vec![
        (Echo::NAME.to_string(), 1),
        (Versioned::NAME.to_string(), 2),
    ];
    assert_eq!(ours().await, want);
    let versioned = b.job_type(Versioned::NAME).await.unwrap().info;
    assert_eq!(versioned.schema, Versioned::schema());
    assert_eq!(
        (versioned.queue.as_str(), versioned.max_attempts),
        (QUEUE, 1)
    );
    assert!(matches!(
        b.job_type("unheard.of").await,
        Err(Error::UnknownJobType(name)) if name == "unheard.of"
    ));

    let refused = b
        .enqueue_json(Versioned::NAME, serde_json::json!({ "n": "six" }))
        .await;
    let Err(Error::InvalidPayload {
        problems, version, ..
    }) = refused
    else {
        panic!("a bad payload was taken: {refused:?}");
    };
    assert_eq!(version, 2);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems.iter().any(|p| p.starts_with("at `/n`")),
        "{problems:?}"
    );
    assert!(problems.iter().any(|p| p.contains("label")), "{problems:?}");
    assert_eq!(counts(&b).await.pending, 0, "nothing stored");

    let payload = serde_json::json!({ "n": 6, "label": "by name" });
    let stored = b.enqueue_json(Versioned::NAME, payload).await.unwrap();
    let r = wait_for(&b, stored.id, "the job completes", |r| {
        r.status.is_finished()
    })
    .await;
    assert_eq!(r.version, 2);
    assert_eq!(
        value(r.result.as_ref().unwrap()),
        serde_json::json!("by name:6")
    );
    running.stop().await.unwrap();
}
