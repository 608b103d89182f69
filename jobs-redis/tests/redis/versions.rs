//! Payload versions as this backend stores them: the `v` field written only for a version other
//! than 1 (alone, in batches, by cron ticks), carried over when a debounced job folds into a
//! waiting one; fetches naming a job twice or none; stored versions counted over sets larger
//! than one script call examines; and the catalog's hash.

use std::collections::HashMap;
use std::time::Duration;

use jobs_core::{
    Backend, Coalesce, CronTickParams, EnqueueParams, JobId, JobStatus, JobTypeInfo, KnownJob,
    NewJob, PublishTypesParams, ReadParams, StoredVersion, StoredVersionsParams, Timestamp,
};
use jobs_redis::{redis, RedisBackend};

use crate::support::{at, fetch, job, raw_connection, single_backend, t0};

/// A job of `queue` at `version`, due at `run_at`.
fn versioned(queue: &str, version: u32, run_at: Timestamp) -> NewJob {
    NewJob {
        version,
        ..job(queue, run_at)
    }
}

async fn put(b: &RedisBackend, jobs: Vec<NewJob>) {
    b.enqueue(EnqueueParams { jobs, now: t0() })
        .await
        .expect("enqueue");
}

async fn version_of(b: &RedisBackend, id: JobId) -> u32 {
    b.read(ReadParams { id })
        .await
        .unwrap()
        .expect("the job")
        .version
}

/// The job's hash as stored.
async fn hash(b: &RedisBackend, queue: &str, id: JobId) -> HashMap<String, String> {
    let key = format!("{{{}:{queue}}}:j:{}", b.key_prefix(), id.0.simple());
    redis::cmd("HGETALL")
        .arg(key)
        .query_async(&mut raw_connection().await)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_version_field_is_written_only_when_not_one() {
    let b = single_backend().await;
    let (one, seven) = (versioned("vq", 1, t0()), versioned("vq", 7, t0()));
    let alone = versioned("vq", 4, t0());
    put(&b, vec![one.clone(), seven.clone()]).await;
    put(&b, vec![alone.clone()]).await;
    let tick = CronTickParams {
        schedule: "nightly".into(),
        tick: t0(),
        job: versioned("vq", 3, t0()),
        now: t0(),
    };
    let ticked = b.enqueue_cron(tick).await.unwrap().expect("a new tick");

    assert!(
        !hash(&b, "vq", one.id).await.contains_key("v"),
        "1 is not written"
    );
    assert_eq!(hash(&b, "vq", seven.id).await["v"], "7");
    assert_eq!(hash(&b, "vq", alone.id).await["v"], "4");
    assert_eq!(hash(&b, "vq", ticked).await["v"], "3");
    for (id, version) in [(one.id, 1), (seven.id, 7), (alone.id, 4), (ticked, 3)] {
        assert_eq!(version_of(&b, id).await, version);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debounced_job_takes_the_version_of_its_new_payload() {
    let b = single_backend().await;
    let debounced = |version| NewJob {
        coalesce: Some(Coalesce::Debounce {
            key: "d".into(),
            window: Duration::from_secs(5),
        }),
        ..versioned("dq", version, at(5_000))
    };
    let first = debounced(1);
    put(&b, vec![first.clone()]).await;
    put(&b, vec![debounced(2)]).await;
    assert_eq!(version_of(&b, first.id).await, 2, "folded with its payload");
    assert_eq!(hash(&b, "dq", first.id).await["v"], "2");
    put(&b, vec![debounced(1)]).await;
    assert_eq!(version_of(&b, first.id).await, 1);
    assert!(!hash(&b, "dq", first.id).await.contains_key("v"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_takes_the_newest_version_named_and_none_when_it_knows_none() {
    let b = single_backend().await;
    let jobs: Vec<NewJob> = (1..=3).map(|v| versioned("kq", v, at(v.into()))).collect();
    put(&b, jobs.clone()).await;
    let known = |versions: &[u32]| {
        let known = versions.iter().map(|&version| KnownJob {
            name: "layout".into(),
            version,
        });
        Some(known.collect())
    };

    let mut nothing = fetch(&["kq", "other"], 10, at(10));
    nothing.known = known(&[]);
    assert!(b.fetch(nothing).await.unwrap().is_empty(), "knows no job");
    let mut params = fetch(&["kq"], 10, at(10));
    params.known = known(&[1, 2]);
    let got: Vec<JobId> = b
        .fetch(params)
        .await
        .unwrap()
        .iter()
        .map(|j| j.record.id)
        .collect();
    assert_eq!(
        got,
        vec![jobs[0].id, jobs[1].id],
        "up to the newer of the two"
    );
    let newest = b
        .read(ReadParams { id: jobs[2].id })
        .await
        .unwrap()
        .unwrap();
    assert_eq!((newest.status, newest.attempt), (JobStatus::Pending, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_versions_walk_sets_larger_than_one_call() {
    let b = single_backend().await;
    // Over 1,000 jobs (one call's budget) in the delayed set, all due at one time, and in the
    // ready set, across two priorities; some of them running, in two queues.
    let mut jobs = Vec::new();
    jobs.extend((0..1_100).map(|_| versioned("big", 3, at(60_000))));
    jobs.extend((0..1_200).map(|_| versioned("big", 1, t0())));
    jobs.extend((0..300).map(|_| NewJob {
        priority: 5,
        ..versioned("big", 2, t0())
    }));
    jobs.extend((0..10).map(|_| versioned("small", 2, t0())));
    jobs.extend((0..4).map(|_| NewJob {
        name: "other".into(),
        ..versioned("small", 1, t0())
    }));
    put(&b, jobs).await;
    let running = b.fetch(fetch(&["big"], 50, t0())).await.unwrap();
    assert!(running.iter().all(|j| j.record.version == 2));

    let stored = b
        .stored_versions(StoredVersionsParams {
            names: vec!["layout".into()],
        })
        .await
        .unwrap();
    let count = |version, jobs| StoredVersion {
        name: "layout".into(),
        version,
        jobs,
    };
    assert_eq!(
        stored,
        vec![count(1, 1_200), count(2, 310), count(3, 1_100)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_is_one_hash_by_name_and_version() {
    let b = single_backend().await;
    let info = |name: &str, version| JobTypeInfo {
        name: name.into(),
        version,
        queue: "q".into(),
        max_attempts: 3,
        priority: 0,
        backoff: jobs_core::Backoff::fixed(Duration::from_secs(1)),
        timeout: None,
        tags: Vec::new(),
        schema: None,
    };
    let types = vec![info("send", 2), info("odd|name", 1)];
    b.publish_types(PublishTypesParams { types, now: t0() })
        .await
        .unwrap();
    let mut fields: Vec<String> = redis::cmd("HKEYS")
        .arg(format!("{{{}}}:types", b.key_prefix()))
        .query_async(&mut raw_connection().await)
        .await
        .unwrap();
    fields.sort();
    assert_eq!(fields, ["odd|name|1", "send|2"]);
    let listed = b.job_types(Default::default()).await.unwrap();
    let names: Vec<(&str, u32)> = listed
        .iter()
        .map(|t| (t.info.name.as_str(), t.info.version))
        .collect();
    assert_eq!(names, [("odd|name", 1), ("send", 2)]);
}
