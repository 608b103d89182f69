//! Listing and managing jobs in the layout on Redis Streams, beyond the checks of the suite it
//! passes: what each action leaves of a job in the store, the lease of a cancelled running job,
//! the retention of cancelled jobs, and a list over more jobs than one scan step examines.

use jobs_core::{
    Backend, CompleteParams, EnqueueParams, ErrorKind, ErrorReport, FailParams, Failure, JobFilter,
    JobId, JobStatus, Operations, PageRequest, PruneParams, ReadParams,
};
use jobs_redis::{redis, RedisBackend};

use crate::streams::{add_raw_entry, counts, done, leased, ready, store};
use crate::support::{at, fetch, keys_like, raw_connection, t0};

/// Job `id`'s record.
async fn record(backend: &RedisBackend, id: JobId) -> jobs_core::JobRecord {
    backend.read(ReadParams { id }).await.unwrap().unwrap()
}

/// How many entries, ids, results, delayed jobs, finished members, dead jobs and leases
/// queue `s` of `prefix` holds.
async fn held(prefix: &str) -> [u64; 7] {
    let mut conn = raw_connection().await;
    let key = |name: &str| format!("{{{prefix}:s}}:{name}");
    let (x, ids, res, delayed, finished, dead, leases): (u64, u64, u64, u64, u64, u64, u64) =
        redis::pipe()
            .cmd("XLEN")
            .arg(key("x"))
            .cmd("HLEN")
            .arg(key("ids"))
            .cmd("HLEN")
            .arg(key("res"))
            .cmd("ZCARD")
            .arg(key("xdelayed"))
            .cmd("ZCARD")
            .arg(key("done"))
            .cmd("ZCARD")
            .arg(key("dead"))
            .cmd("ZCARD")
            .arg(key("leases"))
            .query_async(&mut conn)
            .await
            .unwrap();
    [x, ids, res, delayed, finished, dead, leases]
}

/// The side keys (`d:<id>`, `e:<id>`, leases) queue `s` of `prefix` holds.
async fn side_keys(prefix: &str) -> Vec<String> {
    let mut conn = raw_connection().await;
    let mut keys = Vec::new();
    for kind in ["d", "e", "lease"] {
        keys.extend(keys_like(&mut conn, prefix, &format!(":s}}:{kind}:*")).await);
    }
    keys
}

/// Queue `s`'s counts: pending, scheduled, running, completed, dead, cancelled.
async fn by_status(backend: &RedisBackend) -> [u64; 6] {
    let c = counts(backend).await;
    [
        c.pending,
        c.scheduled,
        c.running,
        c.completed,
        c.dead,
        c.cancelled,
    ]
}

/// One job in each status this layout stores: pending, scheduled, running, completed, dead,
/// cancelled before it ran and cancelled while it ran; in that order.
async fn one_of_each(backend: &RedisBackend) -> Vec<JobId> {
    let got = leased(backend, 4).await;
    let (running, completed, dead, cancelled_running) = (&got[0], &got[1], &got[2], &got[3]);
    let finished = CompleteParams {
        items: vec![done(completed.lease())],
        now: at(1),
    };
    assert_eq!(backend.complete(finished).await.unwrap(), [true]);
    let failure = Failure {
        lease: dead.lease(),
        error: ErrorReport::new(ErrorKind::Fatal, "no"),
        retry_at: None,
    };
    let failed = FailParams {
        items: vec![failure],
        now: at(1),
    };
    assert_eq!(backend.fail(failed).await.unwrap(), [true]);
    backend.cancel(cancelled_running.record.id).await.unwrap();
    let mut scheduled = ready("s");
    scheduled.run_at = at(3_600_000);
    let (pending, cancelled) = (ready("s"), ready("s"));
    let ids = [pending.id, scheduled.id, cancelled.id];
    backend
        .enqueue(EnqueueParams {
            jobs: vec![pending, scheduled, cancelled],
            now: t0(),
        })
        .await
        .unwrap();
    backend.cancel(ids[2]).await.unwrap();
    vec![
        ids[0],
        ids[1],
        running.record.id,
        completed.record.id,
        dead.record.id,
        ids[2],
        cancelled_running.record.id,
    ]
}

#[tokio::test]
async fn each_status_reads_back_and_a_delete_leaves_nothing_of_it() {
    let (prefix, backend) = store().await;
    let ids = one_of_each(&backend).await;
    let statuses = [
        JobStatus::Pending,
        JobStatus::Scheduled,
        JobStatus::Running,
        JobStatus::Completed,
        JobStatus::Dead,
        JobStatus::Cancelled,
        JobStatus::Cancelled,
    ];
    for (id, status) in ids.iter().zip(statuses) {
        assert_eq!(record(&backend, *id).await.status, status, "job {id}");
        let listed = backend
            .jobs(&JobFilter::new().status(status), PageRequest::default())
            .await
            .unwrap();
        assert!(
            listed.jobs.iter().any(|r| r.id == *id),
            "{status} lists {id}"
        );
    }
    assert_eq!(by_status(&backend).await, [1, 1, 1, 1, 1, 2]);
    assert_eq!(backend.delete_all(&JobFilter::new()).await.unwrap(), 7);
    for id in &ids {
        assert!(backend
            .read(ReadParams { id: *id })
            .await
            .unwrap()
            .is_none());
    }
    assert_eq!(by_status(&backend).await, [0, 0, 0, 0, 0, 0]);
    assert_eq!(
        held(&prefix).await,
        [0; 7],
        "entries, ids, res, delayed, done, dead, leases"
    );
    assert_eq!(side_keys(&prefix).await, Vec::<String>::new());
    // Nothing is left to deliver: the pending job's entry went with it.
    assert!(backend
        .fetch(fetch(&["s"], 10, at(10)))
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_cancelled_running_job_is_fenced_and_its_call_dropped() {
    let (prefix, backend) = store().await;
    let got = leased(&backend, 1).await;
    let id = got[0].record.id;
    backend.cancel(id).await.unwrap();
    let r = record(&backend, id).await;
    assert_eq!(
        (
            r.status,
            r.attempt,
            r.started_at.is_some(),
            r.lease.is_none()
        ),
        (JobStatus::Cancelled, 1, true, true)
    );
    assert!(r.finished_at.is_some());
    let late = CompleteParams {
        items: vec![done(got[0].lease())],
        now: at(5),
    };
    assert_eq!(backend.complete(late).await.unwrap(), [false], "fenced");
    assert_eq!(record(&backend, id).await.status, JobStatus::Cancelled);
    let [_, _, _, _, _, _, leases] = held(&prefix).await;
    assert_eq!(leases, 0, "the call's lease went with its one job");
    let c = counts(&backend).await;
    assert_eq!((c.running, c.cancelled), (0, 1));

    // Retried, it runs again as a new attempt 1 and completes.
    backend.retry(id).await.unwrap();
    let again = backend.fetch(fetch(&["s"], 5, at(10))).await.unwrap();
    assert_eq!(
        again
            .iter()
            .map(|j| (j.record.id, j.record.attempt))
            .collect::<Vec<_>>(),
        [(id, 1)]
    );
    let finished = CompleteParams {
        items: vec![done(again[0].lease())],
        now: at(11),
    };
    assert_eq!(backend.complete(finished).await.unwrap(), [true]);
    let c = counts(&backend).await;
    assert_eq!((c.running, c.cancelled, c.completed), (0, 0, 1));
}

#[tokio::test]
async fn cancelled_jobs_are_pruned_with_their_fields() {
    let (prefix, backend) = store().await;
    let got = leased(&backend, 1).await;
    backend.cancel(got[0].record.id).await.unwrap();
    let waiting = ready("s");
    let waiting_id = waiting.id;
    backend
        .enqueue(EnqueueParams {
            jobs: vec![waiting],
            now: t0(),
        })
        .await
        .unwrap();
    backend.cancel(waiting_id).await.unwrap();
    assert_eq!(
        side_keys(&prefix).await.len(),
        1,
        "the waiting job's d:<id>"
    );
    let removed = backend
        .prune(PruneParams {
            queue: "s".into(),
            keep_count: Some(0),
            finished_before: None,
            limit: 100,
            now: at(100_000),
        })
        .await
        .unwrap();
    assert_eq!(removed, 2);
    assert_eq!(counts(&backend).await.cancelled, 0);
    assert_eq!(held(&prefix).await, [0; 7]);
    assert_eq!(side_keys(&prefix).await, Vec::<String>::new());
}

#[tokio::test]
async fn a_list_pages_in_id_order_over_more_jobs_than_a_scan_step() {
    let (_prefix, backend) = store().await;
    let jobs: Vec<_> = (0..5_000).map(|_| ready("s")).collect();
    let mut ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
    backend
        .enqueue(EnqueueParams { jobs, now: t0() })
        .await
        .unwrap();
    ids.sort();
    let every_page = |filter: JobFilter| {
        let backend = backend.clone();
        async move {
            let (mut listed, mut request) = (Vec::new(), PageRequest::default().limit(700));
            loop {
                let page = backend.jobs(&filter, request).await.unwrap();
                listed.extend(page.jobs.iter().map(|r| r.id));
                match page.next {
                    Some(next) => request = PageRequest::after(next).limit(700),
                    None => return listed,
                }
            }
        }
    };
    assert_eq!(every_page(JobFilter::new()).await, ids);
    // Every seventh cancelled: a filter keeps its own, in order.
    let cancelled: Vec<JobId> = ids.iter().copied().step_by(7).collect();
    for id in &cancelled {
        backend.cancel(*id).await.unwrap();
    }
    let by_status = JobFilter::new().status(JobStatus::Cancelled);
    assert_eq!(every_page(by_status).await, cancelled);
    let c = counts(&backend).await;
    assert_eq!(
        (c.pending, c.cancelled),
        (5_000 - cancelled.len() as u64, cancelled.len() as u64)
    );
}

#[tokio::test]
async fn dead_jobs_page_in_id_order_through_the_dead_set() {
    let (_prefix, backend) = store().await;
    let jobs: Vec<_> = (0..2_500)
        .map(|i| {
            let mut job = ready("s");
            if i % 50 == 0 {
                job.name = "rare".into();
            }
            job
        })
        .collect();
    let mut rare: Vec<JobId> = jobs
        .iter()
        .filter(|j| j.name == "rare")
        .map(|j| j.id)
        .collect();
    backend
        .enqueue(EnqueueParams { jobs, now: t0() })
        .await
        .unwrap();
    loop {
        let got = backend.fetch(fetch(&["s"], 1_000, at(1))).await.unwrap();
        if got.is_empty() {
            break;
        }
        let items = got
            .iter()
            .map(|j| Failure {
                lease: j.lease(),
                error: ErrorReport::new(ErrorKind::Fatal, "no"),
                retry_at: None,
            })
            .collect();
        backend
            .fail(FailParams { items, now: at(2) })
            .await
            .unwrap();
    }
    assert_eq!(counts(&backend).await.dead, 2_500);
    rare.sort();
    // One page of 100 walks past a scan step (2,000 jobs) to find its jobs.
    let filter = JobFilter::new().status(JobStatus::Dead).name("rare");
    let (mut listed, mut request) = (Vec::new(), PageRequest::default().limit(100));
    loop {
        let page = backend.jobs(&filter, request).await.unwrap();
        listed.extend(page.jobs.iter().map(|r| r.id));
        match page.next {
            Some(next) => request = PageRequest::after(next).limit(100),
            None => break,
        }
    }
    assert_eq!(listed, rare);
}

#[tokio::test]
async fn every_ending_frees_a_unique_key() {
    let (prefix, backend) = store().await;
    let keyed = || {
        let mut job = ready("s");
        job.unique_key = Some("report:1".into());
        job
    };
    let enqueue = |job: jobs_core::NewJob| {
        let backend = backend.clone();
        async move {
            let stored = backend
                .enqueue(EnqueueParams {
                    jobs: vec![job],
                    now: t0(),
                })
                .await
                .unwrap();
            (stored[0].id, stored[0].duplicate)
        }
    };
    // Dead, cancelled while running, cancelled while waiting, deleted: each frees the key.
    for ending in ["dead", "cancelled running", "cancelled waiting", "deleted"] {
        let job = keyed();
        let id = job.id;
        assert_eq!(enqueue(job).await, (id, false), "{ending}: stored");
        assert_eq!(enqueue(keyed()).await, (id, true), "{ending}: held");
        match ending {
            "dead" | "cancelled running" => {
                let got = backend.fetch(fetch(&["s"], 1, at(1))).await.unwrap();
                assert_eq!(got[0].record.id, id);
                if ending == "dead" {
                    let failure = Failure {
                        lease: got[0].lease(),
                        error: ErrorReport::new(ErrorKind::Fatal, "no"),
                        retry_at: None,
                    };
                    let failed = FailParams {
                        items: vec![failure],
                        now: at(2),
                    };
                    assert_eq!(backend.fail(failed).await.unwrap(), [true]);
                } else {
                    backend.cancel(id).await.unwrap();
                }
            }
            "cancelled waiting" => backend.cancel(id).await.unwrap(),
            _ => backend.delete(id).await.unwrap(),
        }
        let mut conn = raw_connection().await;
        let (holders, keyed_jobs): (u64, u64) = redis::pipe()
            .cmd("HLEN")
            .arg(format!("{{{prefix}:s}}:unique"))
            .cmd("HLEN")
            .arg(format!("{{{prefix}:s}}:xkeyed"))
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!((holders, keyed_jobs), (0, 0), "{ending}: freed");
    }
}

/// Corrupt entries (their `j` cut short, not JSON, not UTF-8, or not a packed job at all) die
/// alone at the fetch; a list of the queue's jobs, filtered or not, still shows the others (and
/// those it can read), and a delete by filter removes them all.
#[tokio::test]
async fn corrupt_jobs_leave_a_list_readable_and_go_with_a_delete() {
    let (prefix, backend) = store().await;
    let healthy = ready("s");
    let healthy_id = healthy.id;
    backend
        .enqueue(EnqueueParams {
            jobs: vec![healthy],
            now: t0(),
        })
        .await
        .unwrap();
    let base = format!("{{{prefix}:s}}:");
    let mut conn = raw_connection().await;
    let meta = "3|f5||bad";
    let run_at = t0().timestamp_micros();
    let packed = |id: JobId, length: usize, payload: &[u8]| {
        let mut j = format!("{}{run_at}:{length}:{meta}", id.0.simple()).into_bytes();
        j.extend_from_slice(payload);
        j
    };
    let ids: Vec<JobId> = (0..4).map(|_| JobId::new()).collect();
    let corrupt = [
        packed(ids[0], 99, b"{}"),
        packed(ids[1], meta.len(), b"not json {"),
        packed(ids[2], meta.len(), b"\"\xff\xfe\""),
        format!("{}garbage", ids[3].0.simple()).into_bytes(),
    ];
    for (id, j) in ids.iter().zip(corrupt) {
        add_raw_entry(&mut conn, &base, *id, j).await;
    }
    let got = backend.fetch(fetch(&["s"], 10, at(1))).await.unwrap();
    assert_eq!(
        got.iter().map(|j| j.record.id).collect::<Vec<_>>(),
        [healthy_id]
    );
    assert_eq!(counts(&backend).await.dead, 4);

    for filter in [
        JobFilter::new(),
        JobFilter::new().status(JobStatus::Dead),
        JobFilter::new().created_after(at(0)),
        JobFilter::new().name("bad"),
        JobFilter::new().tag("t"),
    ] {
        let page = backend.jobs(&filter, PageRequest::default()).await;
        assert!(page.is_ok(), "{filter:?}: {page:?}");
    }
    let listed: Vec<JobId> = backend
        .jobs(&JobFilter::new(), PageRequest::default())
        .await
        .unwrap()
        .jobs
        .iter()
        .map(|r| r.id)
        .collect();
    assert!(listed.contains(&healthy_id));
    assert!(
        listed.contains(&ids[1]),
        "a payload that is not JSON still reads"
    );
    let dead = JobFilter::new().status(JobStatus::Dead);
    assert_eq!(backend.delete_all(&dead).await.unwrap(), 4);
    assert_eq!(counts(&backend).await.dead, 0);
}
