//! Payload versions and the catalog of job types: a job's version is stored and read back, a
//! fetch takes only the versions a worker knows, the versions of waiting and running jobs are
//! counted, and published types are kept by name and version.

use std::time::Duration;

use crate::testing::support::*;
use crate::*;

use super::{complete, fail, fetch_params};

/// A job at `version` of `name`.
fn at_version(name: &str, version: u32) -> NewJob {
    let mut job = new_job(name);
    job.version = version;
    job
}

/// `name` known up to `version`.
fn known(name: &str, version: u32) -> KnownJob {
    KnownJob {
        name: name.to_string(),
        version,
    }
}

/// A job's payload version is stored with it, alone and in a batch, and read back by id and in
/// lists.
pub async fn versions_are_stored_with_each_job(b: AnyBackend) {
    let single = put(&b, at_version("versioned", 3)).await;
    let batch = put_many(
        &b,
        [at_version("versioned", 1), at_version("versioned", 7)],
        t0(),
    )
    .await;
    assert_eq!(record(&b, single).await.version, 3);
    assert_eq!(record(&b, batch[0]).await.version, 1);
    assert_eq!(record(&b, batch[1]).await.version, 7);
    let listed = b
        .list(ListParams {
            filter: JobFilter::new().queue(QUEUE),
            after: None,
            limit: 10,
        })
        .await
        .expect("list");
    let mut versions: Vec<u32> = listed.iter().map(|r| r.version).collect();
    versions.sort_unstable();
    assert_eq!(versions, vec![1, 3, 7]);
    let leased = b
        .fetch(fetch_params(&[QUEUE], 10, t0()))
        .await
        .expect("fetch");
    let mut fetched: Vec<u32> = leased.iter().map(|j| j.record.version).collect();
    fetched.sort_unstable();
    assert_eq!(fetched, vec![1, 3, 7], "fetched records carry the version");
}

/// A fetch that names the versions it knows leaves a job stored at a newer version where it
/// is, untouched, in its place, for a worker that knows it; older and equal versions are taken.
pub async fn versions_newer_than_known_stay_waiting(b: AnyBackend) {
    let mut ids = Vec::new();
    for (version, offset) in [(3, -3_000), (1, -2_000), (2, -1_000)] {
        let mut job = at_version("evolving", version);
        job.run_at = at(offset);
        ids.push(put(&b, job).await);
    }
    let mut params = fetch_params(&[QUEUE], 10, t0());
    params.known = Some(vec![known("evolving", 2), known("other", 9)]);
    let got = b.fetch(params).await.expect("fetch");
    let taken: Vec<JobId> = got.iter().map(|j| j.record.id).collect();
    assert_eq!(
        taken,
        vec![ids[1], ids[2]],
        "versions 1 and 2, in run order"
    );
    let newer = record(&b, ids[0]).await;
    assert_eq!(
        (newer.status, newer.attempt, newer.errors.len()),
        (JobStatus::Pending, 0, 0),
        "the job of version 3 is untouched"
    );

    let mut params = fetch_params(&[QUEUE], 10, t0());
    params.known = Some(vec![known("evolving", 3)]);
    let got = b.fetch(params).await.expect("fetch");
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].record.id, got[0].record.attempt), (ids[0], 1));
}

/// The waiting (pending, scheduled) and running jobs of the names asked for are counted by
/// version; finished and dead jobs, and other names, are not.
pub async fn versions_stored_are_counted_for_waiting_and_running_jobs(b: AnyBackend) {
    let mut scheduled = at_version("counted", 1);
    scheduled.run_at = at(60_000);
    put(&b, scheduled).await;
    put(&b, at_version("counted", 1)).await;
    put(&b, at_version("uncounted", 1)).await;
    // One of version 2 running, one of version 4 completed, one of version 5 dead.
    for version in [2, 4, 5] {
        let mut job = at_version("counted", version);
        job.queue = OTHER_QUEUE.to_string();
        job.max_attempts = 1;
        put(&b, job).await;
    }
    let mut leased = b
        .fetch(fetch_params(&[OTHER_QUEUE], 3, t0()))
        .await
        .expect("fetch");
    leased.sort_by_key(|j| j.record.version);
    assert!(complete(&b, &leased[1], "1", at(1)).await);
    assert!(fail(&b, &leased[2], "no", None, at(1)).await);

    let params = StoredVersionsParams {
        names: vec!["counted".to_string(), "absent".to_string()],
    };
    let stored = b.stored_versions(params).await.expect("stored versions");
    let version = |version, jobs| StoredVersion {
        name: "counted".to_string(),
        version,
        jobs,
    };
    assert_eq!(stored, vec![version(1, 2), version(2, 1)]);
}

/// Published job types are kept by name and version: publishing a version again replaces it,
/// and the catalog lists every version of every type, by name then version.
pub async fn versions_published_are_listed_by_name_and_version(b: AnyBackend) {
    let info = |name: &str, version: u32, queue: &str| JobTypeInfo {
        name: name.to_string(),
        version,
        queue: queue.to_string(),
        max_attempts: 4,
        priority: 3,
        backoff: Backoff::fixed(Duration::from_millis(1_500)),
        timeout: Some(Duration::from_secs(30)),
        tags: vec!["billing".to_string()],
        schema: Some(serde_json::json!({
            "type": "object",
            "properties": { "user_id": { "type": "integer" } },
            "required": ["user_id"],
        })),
    };
    assert!(b.job_types(JobTypesParams {}).await.unwrap().is_empty());
    let publish = |types: Vec<JobTypeInfo>, now| {
        let b = b.clone();
        async move { b.publish_types(PublishTypesParams { types, now }).await }
    };
    publish(
        vec![info("send", 2, "mail"), info("bill", 1, "money")],
        at(0),
    )
    .await
    .unwrap();
    publish(vec![info("send", 1, "mail")], at(1)).await.unwrap();
    let mut replaced = info("send", 2, "email");
    replaced.schema = None;
    publish(vec![replaced.clone()], at(2)).await.unwrap();

    let listed = b.job_types(JobTypesParams {}).await.unwrap();
    let got: Vec<(&str, u32, Timestamp)> = listed
        .iter()
        .map(|t| (t.info.name.as_str(), t.info.version, t.published_at))
        .collect();
    assert_eq!(
        got,
        vec![("bill", 1, at(0)), ("send", 1, at(1)), ("send", 2, at(2))]
    );
    assert_eq!(listed[0].info, info("bill", 1, "money"), "every field kept");
    assert_eq!(
        listed[2].info, replaced,
        "the second publication replaced the first"
    );
}
