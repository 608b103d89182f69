//! Jobs that wait apart from the streams in the layout on Redis Streams (`xapart`), and a fetch
//! takes as entries of `xa`. Those with key limits: every way out of running gives the key's
//! place back, a job handed back or rescued keeps its place, one cancelled or deleted while it
//! waits leaves no member behind, and the stored versions count them where they wait. Those a
//! worker read but does not run (another name, a newer version), by a fetch or a blocked read:
//! set aside untouched, they wait for a worker that runs them, in their order.

use jobs_core::{
    Backend, ErrorKind, ErrorReport, FailParams, Failure, FlowParams, JobId, JobStatus, KeyLimits,
    KnownJob, LeasedJob, NewJob, Operations, ReadParams, Release, ReleaseParams, RescueParams,
    RescueTarget, StoredVersion, StoredVersionsParams, SubscribeParams, Timestamp,
};
use jobs_redis::{redis, RedisBackend};

use crate::streams::{done, put, ready, status, store};
use crate::support::{at, fetch, raw_connection, t0};

/// A job of queue `s` that shares a concurrency of one with the other jobs of key `key`.
fn solo(key: &str) -> NewJob {
    let mut job = ready("s");
    job.key_limits = Some(KeyLimits {
        key: key.into(),
        concurrency: Some(1),
        rate: None,
    });
    job
}

/// Fetches up to 10 jobs of queue `s` at `now` as a worker that knows the queue's flow.
async fn take(backend: &RedisBackend, now: Timestamp) -> Vec<LeasedJob> {
    let mut params = fetch(&["s"], 10, now);
    params.flow = backend.flow(FlowParams {}).await.unwrap();
    params.lease_for = std::time::Duration::from_secs(30);
    backend.fetch(params).await.unwrap()
}

/// The ids of `jobs`.
fn ids(jobs: &[LeasedJob]) -> Vec<JobId> {
    jobs.iter().map(|j| j.record.id).collect()
}

/// The running jobs each key counts, as the store keeps them (`krun`).
async fn key_places(prefix: &str) -> Vec<(String, i64)> {
    let mut conn = raw_connection().await;
    redis::cmd("HGETALL")
        .arg(format!("{{{prefix}:s}}:krun"))
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// How many jobs wait in `xapart`.
async fn waiting_keyed(prefix: &str) -> usize {
    let mut conn = raw_connection().await;
    redis::cmd("ZCARD")
        .arg(format!("{{{prefix}:s}}:xapart"))
        .query_async(&mut conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn every_way_out_of_running_gives_the_keys_place_back() {
    let (prefix, backend) = store().await;
    let jobs = put(&backend, (0..7).map(|_| solo("k")).collect()).await;
    let mut next = 0;
    // Each round takes the key's one job, checks the key counts it, lets it go one way, and
    // checks the place came back: the next fetch takes the next job.
    let mut round = |leased: Vec<LeasedJob>| {
        assert_eq!(ids(&leased), [jobs[next]], "one at a time, in order");
        next += 1;
        leased.into_iter().next().unwrap()
    };
    let job = round(take(&backend, t0()).await);
    assert_eq!(key_places(&prefix).await, [("k".to_string(), 1)]);
    assert!(take(&backend, t0()).await.is_empty(), "the key is full");
    let completed = jobs_core::CompleteParams {
        items: vec![done(job.lease())],
        now: at(1),
    };
    assert_eq!(backend.complete(completed).await.unwrap(), [true]);
    assert_eq!(key_places(&prefix).await, []);

    let failure = |job: &LeasedJob, retry_at: Option<Timestamp>| FailParams {
        items: vec![Failure {
            lease: job.lease(),
            error: ErrorReport::new(ErrorKind::Retryable, "again"),
            retry_at,
        }],
        now: at(2),
    };
    let job = round(take(&backend, at(2)).await);
    assert_eq!(backend.fail(failure(&job, None)).await.unwrap(), [true]);
    assert_eq!(status(&backend, job.record.id).await, JobStatus::Dead);
    assert_eq!(key_places(&prefix).await, []);

    let job = round(take(&backend, at(3)).await);
    backend.cancel(job.record.id).await.unwrap();
    assert_eq!(key_places(&prefix).await, []);

    let job = round(take(&backend, at(4)).await);
    // Retried a minute later: it waits in `xdelayed` meanwhile, and no longer counts.
    assert_eq!(
        backend.fail(failure(&job, Some(at(60_000)))).await.unwrap(),
        [true]
    );
    assert_eq!(key_places(&prefix).await, []);
    let next_job = round(take(&backend, at(5)).await);
    let handed_back = ReleaseParams {
        items: vec![Release {
            lease: next_job.lease(),
            run_at: None,
        }],
        now: at(6),
    };
    assert_eq!(backend.release(handed_back).await.unwrap(), [true]);
    assert_eq!(key_places(&prefix).await, []);
    // Handed back, it keeps its place ahead of the jobs after it.
    let again = take(&backend, at(7)).await;
    assert_eq!(ids(&again), [next_job.record.id], "it keeps its place");
    let rescue = RescueParams {
        target: RescueTarget::Lapsed,
        now: at(40_000),
        limit: 10,
        error: ErrorReport::lease_expired(),
    };
    assert_eq!(
        backend.rescue(rescue).await.unwrap(),
        [next_job.record.id],
        "its lease lapsed"
    );
    assert_eq!(key_places(&prefix).await, []);
    let rescued = take(&backend, at(40_001)).await;
    assert_eq!(
        ids(&rescued),
        [next_job.record.id],
        "rescued, it keeps its place"
    );

    // Once due, the retried job waits in `xapart` again, behind the rescued one.
    assert_eq!(
        waiting_keyed(&prefix).await,
        2,
        "the retry waits in `xdelayed` until it is due"
    );
    let completed = jobs_core::CompleteParams {
        items: vec![done(rescued[0].lease())],
        now: at(60_000),
    };
    assert_eq!(backend.complete(completed).await.unwrap(), [true]);
    let retried = take(&backend, at(60_001)).await;
    assert_eq!(
        ids(&retried),
        [jobs[5]],
        "the due retry waits behind the jobs added before it"
    );
    assert_eq!(
        waiting_keyed(&prefix).await,
        2,
        "the retry and the last one wait"
    );
}

#[tokio::test]
async fn a_keyed_job_cancelled_or_deleted_while_it_waits_leaves_nothing_behind() {
    let (prefix, backend) = store().await;
    let jobs = put(&backend, (0..3).map(|_| solo("k")).collect()).await;
    assert_eq!(waiting_keyed(&prefix).await, 3);
    assert_eq!(status(&backend, jobs[0]).await, JobStatus::Pending);
    backend.cancel(jobs[0]).await.unwrap();
    assert_eq!(status(&backend, jobs[0]).await, JobStatus::Cancelled);
    backend.delete(jobs[1]).await.unwrap();
    assert_eq!(waiting_keyed(&prefix).await, 1, "only the third waits");
    assert_eq!(ids(&take(&backend, t0()).await), [jobs[2]]);
    // Retried, the cancelled job waits for its key again.
    backend.retry(jobs[0]).await.unwrap();
    assert_eq!(waiting_keyed(&prefix).await, 1);
    assert!(take(&backend, at(1)).await.is_empty(), "the key is full");
}

#[tokio::test]
async fn keyed_jobs_are_counted_among_the_stored_versions() {
    let (_prefix, backend) = store().await;
    let versioned = |version: u32| {
        let mut job = solo("k");
        job.version = version;
        job
    };
    put(&backend, vec![versioned(2), versioned(3), versioned(3)]).await;
    assert_eq!(take(&backend, t0()).await.len(), 1, "one runs, two wait");
    let counted = backend
        .stored_versions(StoredVersionsParams {
            names: vec!["layout".into()],
        })
        .await
        .unwrap();
    let expected = [(2, 1), (3, 2)].map(|(version, jobs)| StoredVersion {
        name: "layout".into(),
        version,
        jobs,
    });
    assert_eq!(counted, expected);
}

/// A job of queue `s` named `name`, stored at `version`.
fn named(name: &str, version: u32) -> NewJob {
    let mut job = ready("s");
    job.name = name.into();
    job.version = version;
    job
}

/// Fetches up to 10 jobs of queue `s` at `now` as a worker that runs `known`.
async fn take_known(
    backend: &RedisBackend,
    known: &[(&str, u32)],
    now: Timestamp,
) -> Vec<LeasedJob> {
    let mut params = fetch(&["s"], 10, now);
    params.known = Some(
        known
            .iter()
            .map(|(name, version)| KnownJob {
                name: (*name).into(),
                version: *version,
            })
            .collect(),
    );
    backend.fetch(params).await.unwrap()
}

/// The status, attempts and errors of job `id`.
async fn untouched(backend: &RedisBackend, id: JobId) -> (JobStatus, u32, usize) {
    let r = backend
        .read(ReadParams { id })
        .await
        .unwrap()
        .expect("stored");
    (r.status, r.attempt, r.errors.len())
}

#[tokio::test]
async fn jobs_a_worker_does_not_run_wait_untouched_for_one_that_does() {
    let (prefix, backend) = store().await;
    let jobs = put(
        &backend,
        vec![
            named("old", 1),
            named("new", 1),
            named("old", 1),
            named("old", 2),
            named("old", 1),
        ],
    )
    .await;
    // An older worker reads every entry, runs those of its name and version, and sets the
    // others aside.
    let old = take_known(&backend, &[("old", 1)], t0()).await;
    assert_eq!(ids(&old), [jobs[0], jobs[2], jobs[4]]);
    for id in [jobs[1], jobs[3]] {
        assert_eq!(
            untouched(&backend, id).await,
            (JobStatus::Pending, 0, 0),
            "set aside untouched"
        );
    }
    assert_eq!(waiting_keyed(&prefix).await, 2);
    let c = crate::streams::counts(&backend).await;
    assert_eq!((c.pending, c.running), (2, 3));
    assert!(
        take_known(&backend, &[("old", 1)], at(1)).await.is_empty(),
        "it looks past them"
    );
    let mut conn = raw_connection().await;
    let taken: usize = redis::cmd("XLEN")
        .arg(format!("{{{prefix}:s}}:xa"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(taken, 0, "without taking them from where they wait");
    // A newer worker takes them, in their order, at their first attempt; not one cancelled
    // while it waited.
    let late = put(&backend, vec![named("new", 1)]).await[0];
    assert!(take_known(&backend, &[("old", 1)], at(2)).await.is_empty());
    backend.cancel(late).await.unwrap();
    assert_eq!(waiting_keyed(&prefix).await, 2, "the cancelled job left");
    let new = take_known(&backend, &[("old", 2), ("new", 1)], at(3)).await;
    assert_eq!(ids(&new), [jobs[1], jobs[3]]);
    assert!(new.iter().all(|j| j.record.attempt == 1));
    assert_eq!(waiting_keyed(&prefix).await, 0);
    assert_eq!(status(&backend, late).await, JobStatus::Cancelled);
}

#[tokio::test]
async fn a_blocked_read_sets_aside_the_jobs_its_worker_does_not_run() {
    let (_, backend) = store().await;
    let wakeup = backend
        .subscribe(SubscribeParams {
            queues: vec!["s".into()],
            worker: Some("layout".into()),
        })
        .await
        .unwrap();
    let mut params = fetch(&["s"], 10, t0());
    params.deliver = 4;
    params.known = Some(vec![KnownJob {
        name: "old".into(),
        version: 1,
    }]);
    assert!(backend.fetch(params).await.unwrap().is_empty());
    // One enqueue: the read takes both entries, hands over the one its worker runs and sets
    // the newer one aside.
    let both = put(&backend, vec![named("old", 2), named("old", 1)]).await;
    let (newer, runs) = (both[0], both[1]);
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while got.is_empty() && tokio::time::Instant::now() < deadline {
        let _ = tokio::time::timeout_at(deadline, wakeup.wait()).await;
        got = wakeup.delivered();
    }
    assert_eq!(ids(&got), [runs], "only the job it runs reaches the worker");
    // Set aside once the read's lease is written, after the hand-over.
    let mut state = untouched(&backend, newer).await;
    while state.0 == JobStatus::Running && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        state = untouched(&backend, newer).await;
    }
    assert_eq!(state, (JobStatus::Pending, 0, 0));
    let new = take_known(&backend, &[("old", 2)], at(2)).await;
    assert_eq!(ids(&new), [newer]);
}
