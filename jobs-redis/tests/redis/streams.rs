//! The layout on Redis Streams (`layout=streams`), beyond the checks of the suite it passes:
//! its store's name, what it refuses while it is being built, its fence, and the keys a drain
//! leaves behind.

use jobs_core::workflow::{Step, StepRole, WorkflowId};
use jobs_core::{
    Backend, CompleteParams, Completion, CountsParams, EnqueueParams, Error, ErrorKind,
    ErrorReport, FailParams, Failure, FinishedParams, JobId, JobStatus, LeaseRef, LeaseToken,
    LeasedJob, PruneParams, ReadParams, Timestamp,
};
use jobs_redis::{redis, RedisBackend};
use serde_json::value::RawValue;

use crate::support::{at, fetch, fresh_prefix, job, keys_like, raw_connection, t0, url_under};

/// A fresh store in the streams layout: its prefix, and a backend on it.
pub(crate) async fn store() -> (String, RedisBackend) {
    let prefix = fresh_prefix();
    let backend = RedisBackend::connect(&url_under(&prefix, "streams"))
        .await
        .unwrap();
    (prefix, backend)
}

/// Fails leased job `job` at `now` with a retryable error `message`, to run again at
/// `retry_at`; the failure must be accepted.
async fn fail_for_retry(
    backend: &RedisBackend,
    job: &LeasedJob,
    message: &str,
    retry_at: Timestamp,
    now: Timestamp,
) {
    let failure = Failure {
        lease: job.lease(),
        error: ErrorReport::new(ErrorKind::Retryable, message),
        retry_at: Some(retry_at),
    };
    let params = FailParams {
        items: vec![failure],
        now,
    };
    assert_eq!(backend.fail(params).await.unwrap(), vec![true]);
}

/// A job of `queue` due now, of the default priority.
pub(crate) fn ready(queue: &str) -> jobs_core::NewJob {
    let mut new = job(queue, t0());
    new.priority = jobs_core::DEFAULT_PRIORITY;
    new
}

/// Enqueues `jobs` at t0; their ids, in order.
pub(crate) async fn put(backend: &RedisBackend, jobs: Vec<jobs_core::NewJob>) -> Vec<JobId> {
    let ids = jobs.iter().map(|j| j.id).collect();
    backend
        .enqueue(EnqueueParams { jobs, now: t0() })
        .await
        .unwrap();
    ids
}

/// The status of job `id`.
pub(crate) async fn status(backend: &RedisBackend, id: JobId) -> JobStatus {
    let read = backend.read(ReadParams { id }).await.unwrap();
    read.expect("stored").status
}

/// The counts of queue `s`.
pub(crate) async fn counts(backend: &RedisBackend) -> jobs_core::QueueCounts {
    backend
        .counts(CountsParams { queue: "s".into() })
        .await
        .unwrap()
}

/// Adds an entry of `j` alone for job `id` to the default stream of the queue whose keys start
/// with `base`, as an enqueue writes one: the entry, its id in the id map, the counts.
pub(crate) async fn add_raw_entry(
    conn: &mut redis::aio::MultiplexedConnection,
    base: &str,
    id: JobId,
    j: impl redis::ToRedisArgs,
) {
    let entry: String = redis::cmd("XADD")
        .arg(format!("{base}x"))
        .arg("*")
        .arg("j")
        .arg(j)
        .query_async(conn)
        .await
        .unwrap();
    let _: () = redis::pipe()
        .hset(format!("{base}ids"), id.0.simple().to_string(), entry)
        .hincr(format!("{base}counts"), "q", 1)
        .hincr(format!("{base}counts"), "p", 1)
        .query_async(conn)
        .await
        .unwrap();
}

fn invalid(e: Error) -> String {
    match e {
        Error::Invalid(message) => message,
        other => panic!("an Invalid error, not {other:?}"),
    }
}

#[tokio::test]
async fn a_store_is_named_streams_and_refused_by_the_other_layout() {
    let prefix = fresh_prefix();
    let streams = RedisBackend::connect(&url_under(&prefix, "streams"))
        .await
        .unwrap();
    streams
        .enqueue(EnqueueParams {
            jobs: vec![ready("s")],
            now: t0(),
        })
        .await
        .unwrap();
    let mut conn = raw_connection().await;
    let name: String = redis::cmd("GET")
        .arg(format!("{{{prefix}}}:layout"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(name, "streams");
    let message = invalid(
        RedisBackend::connect(&url_under(&prefix, "hash"))
            .await
            .unwrap_err(),
    );
    assert!(message.contains("laid out as `streams`"), "{message}");

    let other = fresh_prefix();
    RedisBackend::connect(&url_under(&other, "hash"))
        .await
        .unwrap();
    let message = invalid(
        RedisBackend::connect(&url_under(&other, "streams"))
            .await
            .unwrap_err(),
    );
    assert!(message.contains("laid out as `hash`"), "{message}");
    assert!(message.contains("reads the layout `streams`"), "{message}");
}

#[tokio::test]
async fn what_is_not_built_yet_is_refused_and_stores_nothing() {
    let (prefix, backend) = store().await;
    let mut step = ready("s");
    step.step = Some(Box::new(Step {
        workflow: WorkflowId::new(),
        index: 0,
        role: StepRole::Step { stage: 0 },
        group: false,
        slots: 0,
        input: None,
        on_complete: Vec::new(),
        on_dead: Vec::new(),
    }));
    let e = backend
        .enqueue(EnqueueParams {
            jobs: vec![ready("s"), step],
            now: t0(),
        })
        .await
        .unwrap_err();
    let message = invalid(e);
    assert!(message.contains("workflow steps"), "{message}");
    assert!(message.contains("layout `streams`"), "{message}");
    let mut conn = raw_connection().await;
    assert_eq!(
        keys_like(&mut conn, &prefix, "*").await,
        vec![format!("{{{prefix}}}:layout")],
        "nothing is stored"
    );
}

/// Enqueues `n` jobs of queue `s` and fetches them all.
pub(crate) async fn leased(backend: &RedisBackend, n: usize) -> Vec<LeasedJob> {
    let jobs = (0..n).map(|_| ready("s")).collect();
    backend
        .enqueue(EnqueueParams { jobs, now: t0() })
        .await
        .unwrap();
    let got = backend.fetch(fetch(&["s"], n, t0())).await.unwrap();
    assert_eq!(got.len(), n);
    got
}

pub(crate) fn done(lease: LeaseRef) -> Completion {
    Completion {
        lease,
        result: RawValue::from_string("1".into()).unwrap(),
    }
}

#[tokio::test]
async fn a_completion_counts_only_under_the_token_its_fetch_gave() {
    let (_, backend) = store().await;
    let got = leased(&backend, 3).await;
    // Another call's id, another entry, another job's entry.
    let bits = |i: usize| got[i].token.0.as_u128();
    let other_call = LeaseToken(uuid::Uuid::from_u128(bits(0) ^ (1 << 127)));
    let other_entry = LeaseToken(uuid::Uuid::from_u128(bits(0) + 7));
    let forged = [
        LeaseRef {
            id: got[0].record.id,
            token: other_call,
        },
        LeaseRef {
            id: got[0].record.id,
            token: other_entry,
        },
        LeaseRef {
            id: got[0].record.id,
            token: got[1].token,
        },
    ];
    let accepted = backend
        .complete(CompleteParams {
            items: forged.into_iter().map(done).collect(),
            now: at(1),
        })
        .await
        .unwrap();
    assert_eq!(accepted, vec![false; 3]);
    assert_eq!(counts(&backend).await.running, 3);

    let accepted = backend
        .complete(CompleteParams {
            items: got.iter().map(|j| done(j.lease())).collect(),
            now: at(1),
        })
        .await
        .unwrap();
    assert_eq!(accepted, vec![true; 3]);
    let record = backend
        .read(ReadParams {
            id: got[0].record.id,
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status, JobStatus::Completed);
    assert_eq!(record.attempt, 1);
    assert_eq!(record.finished_at, Some(at(1)));
    assert_eq!(record.started_at, Some(t0()));
    assert_eq!(record.result.unwrap().get(), "1");
}

#[tokio::test]
async fn a_running_job_reads_back_with_its_lease() {
    let (_, backend) = store().await;
    let got = leased(&backend, 2).await;
    let record = backend
        .read(ReadParams {
            id: got[1].record.id,
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status, JobStatus::Running);
    assert_eq!(record.attempt, 1);
    assert_eq!(record.lease, got[1].record.lease);
    assert_eq!(record.started_at, Some(t0()));
    assert_eq!(record.payload.get(), "{}");
}

#[tokio::test]
async fn a_drained_queue_keeps_no_lease_of_its_fetch_calls() {
    let (prefix, backend) = store().await;
    let got = leased(&backend, 10).await;
    let items: Vec<Completion> = got.iter().map(|j| done(j.lease())).collect();
    let mut conn = raw_connection().await;
    let leases = keys_like(&mut conn, &prefix, ":s}:lease:*").await;
    assert_eq!(leases.len(), 1, "one lease for the fetch call: {leases:?}");
    // The first half leaves the call holding the rest; the second half ends it.
    for half in items.chunks(5) {
        let accepted = backend
            .complete(CompleteParams {
                items: half.to_vec(),
                now: at(1),
            })
            .await
            .unwrap();
        assert_eq!(accepted, vec![true; 5]);
    }
    assert!(keys_like(&mut conn, &prefix, ":s}:lease:*")
        .await
        .is_empty());
    let members: u32 = redis::cmd("ZCARD")
        .arg(format!("{{{prefix}:s}}:leases"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(members, 0);
    let c = counts(&backend).await;
    assert_eq!((c.pending, c.running, c.completed), (0, 0, 10));
}

#[tokio::test]
async fn a_retried_job_keeps_when_it_was_created_and_waits_for_its_retry() {
    let (_, backend) = store().await;
    let got = leased(&backend, 1).await;
    let id = got[0].record.id;
    fail_for_retry(&backend, &got[0], "try again", at(5_000), at(1_000)).await;
    let r = backend
        .read(ReadParams { id })
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(
        (r.status, r.attempt, r.created_at, r.run_at),
        (JobStatus::Pending, 1, t0(), at(5_000))
    );
    assert_eq!(r.errors.len(), 1);
    assert_eq!(r.errors[0].message, "try again");
    assert!(backend
        .fetch(fetch(&["s"], 1, at(4_000)))
        .await
        .unwrap()
        .is_empty());
    let again = backend.fetch(fetch(&["s"], 1, at(5_000))).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(
        (
            again[0].record.id,
            again[0].record.attempt,
            again[0].record.created_at
        ),
        (id, 2, t0())
    );
    let c = counts(&backend).await;
    assert_eq!((c.pending, c.running, c.scheduled), (0, 1, 0));
}

/// A worker sleeps once a fetch found no entry: a job enqueued then wakes it, even while the
/// queue holds a pending job that waits for its retry (counted pending, not yet an entry).
#[tokio::test]
async fn an_enqueue_wakes_the_workers_when_no_entry_waits() {
    let (_, backend) = store().await;
    let got = leased(&backend, 1).await;
    fail_for_retry(&backend, &got[0], "later", at(60_000), t0()).await;
    assert_eq!(counts(&backend).await.pending, 1);
    let wakeup = backend
        .subscribe(jobs_core::SubscribeParams {
            queues: vec!["s".into()],
            worker: None,
        })
        .await
        .unwrap();
    let enqueue = |n: usize| {
        let jobs = (0..n).map(|_| ready("s")).collect();
        backend.enqueue(EnqueueParams { jobs, now: t0() })
    };
    enqueue(1).await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(5), wakeup.wait())
        .await
        .expect("woken by the first ready job");
    // An entry now waits: the next enqueue publishes nothing, as in the hash layout.
    enqueue(1).await.unwrap();
    let again = tokio::time::timeout(std::time::Duration::from_millis(300), wakeup.wait()).await;
    assert!(again.is_err(), "no wake-up while an entry waits");
}

/// Completes `n` jobs of queue `s` in one call at `now`; returns their ids.
async fn completed(backend: &RedisBackend, n: usize, now: Timestamp) -> Vec<JobId> {
    let got = leased(backend, n).await;
    let items: Vec<Completion> = got.iter().map(|j| done(j.lease())).collect();
    let accepted = backend
        .complete(CompleteParams { items, now })
        .await
        .unwrap();
    assert_eq!(accepted, vec![true; n]);
    got.iter().map(|j| j.record.id).collect()
}

#[tokio::test]
async fn prune_removes_the_oldest_completed_jobs_with_their_entries() {
    let (prefix, backend) = store().await;
    let old = completed(&backend, 4, at(1_000)).await;
    let newer = completed(&backend, 4, at(2_000)).await;
    let prune = |keep_count, finished_before, limit| {
        backend.prune(PruneParams {
            queue: "s".into(),
            keep_count,
            finished_before,
            limit,
            now: at(3_000),
        })
    };
    // By count: the oldest go first, a member cut in part keeps the rest.
    assert_eq!(prune(Some(5), None, 100).await.unwrap(), 3);
    let kept = |ids: Vec<JobId>| {
        let backend = backend.clone();
        async move {
            let mut kept = Vec::new();
            for id in ids {
                kept.push(backend.read(ReadParams { id }).await.unwrap().is_some());
            }
            kept
        }
    };
    assert_eq!(kept(old.clone()).await, vec![false, false, false, true]);
    assert_eq!(counts(&backend).await.completed, 5);
    // By age, at most `limit` per call.
    assert_eq!(prune(None, Some(at(1_500)), 100).await.unwrap(), 1);
    assert_eq!(prune(None, Some(at(2_500)), 3).await.unwrap(), 3);
    assert_eq!(prune(None, Some(at(2_500)), 3).await.unwrap(), 1);
    assert_eq!(kept(newer).await, vec![false; 4]);
    assert_eq!(counts(&backend).await.completed, 0);
    let mut conn = raw_connection().await;
    let queue = |key: &str| format!("{{{prefix}:s}}:{key}");
    let (entries, ids, results, members): (u64, u64, u64, u64) = redis::pipe()
        .cmd("XLEN")
        .arg(queue("x"))
        .cmd("HLEN")
        .arg(queue("ids"))
        .cmd("HLEN")
        .arg(queue("res"))
        .cmd("ZCARD")
        .arg(queue("done"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!((entries, ids, results, members), (0, 0, 0, 0));
    let since = backend
        .finished_since(FinishedParams {
            queue: "s".into(),
            since: at(0),
        })
        .await
        .unwrap();
    assert_eq!(since, 0);
}

/// A fetch call reads one stream, so the range of its entries holds no other call's: jobs of
/// a later call that were renewed are not rescued when an earlier call's lease lapses.
#[tokio::test]
async fn a_lapsed_call_leaves_the_renewed_jobs_of_later_calls_alone() {
    let (_, backend) = store().await;
    let mut jobs: Vec<_> = (0..4).map(|_| ready("s")).collect();
    let mut urgent = ready("s");
    urgent.priority = 5;
    jobs.push(urgent);
    backend
        .enqueue(EnqueueParams { jobs, now: t0() })
        .await
        .unwrap();
    // Leases of 30 s: the first call takes the urgent job alone, the second two others.
    let first = backend.fetch(fetch(&["s"], 3, t0())).await.unwrap();
    assert_eq!(
        first.iter().map(|j| j.record.priority).collect::<Vec<_>>(),
        vec![5]
    );
    let second = backend.fetch(fetch(&["s"], 2, t0())).await.unwrap();
    assert_eq!(second.len(), 2);
    let items = first.iter().map(|j| done(j.lease())).collect();
    let accepted = backend
        .complete(CompleteParams { items, now: at(1) })
        .await
        .unwrap();
    assert_eq!(accepted, vec![true]);
    let renew = jobs_core::RenewParams {
        items: second.iter().map(LeasedJob::lease).collect(),
        expires_at: at(120_000),
        now: at(20_000),
    };
    assert_eq!(backend.renew(renew).await.unwrap(), vec![true; 2]);
    let rescued = backend
        .rescue(jobs_core::RescueParams {
            target: jobs_core::RescueTarget::Lapsed,
            limit: 100,
            error: ErrorReport::new(ErrorKind::LeaseLost, "lease expired"),
            now: at(60_000),
        })
        .await
        .unwrap();
    assert!(rescued.is_empty(), "{rescued:?}");
    let c = counts(&backend).await;
    assert_eq!((c.running, c.pending, c.completed), (2, 2, 1));
}

/// A finished job's entry stays named by the id map (reads and retention find it there), so
/// the fence tells it ended by `res`: under its lease, a completion repeated is accepted and
/// changes nothing, and every other write is refused; its neighbour of the same fetch, still
/// running, takes them all.
#[tokio::test]
async fn a_finished_job_is_fenced_by_how_it_ended() {
    let (_, backend) = store().await;
    let got = leased(&backend, 2).await;
    let complete = |job: &LeasedJob, now| {
        let items = vec![done(job.lease())];
        let backend = &backend;
        async move {
            backend
                .complete(CompleteParams { items, now })
                .await
                .unwrap()
        }
    };
    assert_eq!(complete(&got[0], at(1)).await, vec![true]);
    assert_eq!(complete(&got[0], at(2)).await, vec![true], "a repeat");
    let leases: Vec<LeaseRef> = got.iter().map(LeasedJob::lease).collect();
    let renew = jobs_core::RenewParams {
        items: leases.clone(),
        expires_at: at(120_000),
        now: at(3),
    };
    assert_eq!(backend.renew(renew).await.unwrap(), vec![false, true]);
    for lease in &leases {
        let progress = jobs_core::ProgressParams {
            lease: *lease,
            progress: 50,
            now: at(3),
        };
        let accepted = backend.progress(progress).await.unwrap();
        assert_eq!(accepted, *lease == leases[1]);
    }
    let failures = leases
        .iter()
        .map(|lease| Failure {
            lease: *lease,
            error: ErrorReport::new(ErrorKind::Retryable, "late"),
            retry_at: None,
        })
        .collect();
    let failed = backend
        .fail(FailParams {
            items: failures,
            now: at(4),
        })
        .await
        .unwrap();
    assert_eq!(failed, vec![false, true]);
    let c = counts(&backend).await;
    assert_eq!((c.running, c.completed, c.dead), (0, 1, 1));
    let read = |id| backend.read(ReadParams { id });
    let first = read(got[0].record.id).await.unwrap().unwrap();
    assert_eq!(first.status, JobStatus::Completed);
    assert_eq!(first.finished_at, Some(at(1)), "the first completion's");
    assert!(first.errors.is_empty());
    let second = read(got[1].record.id).await.unwrap().unwrap();
    assert_eq!((second.status, second.progress), (JobStatus::Dead, 50));
}

/// A token names its call and its entry, not the entry's stream: a released job's new entry
/// (in `xr`) under the call that read the queue's stream is another job's lease, should the
/// two ids meet, and the fence refuses it by the stream its call read.
#[tokio::test]
async fn a_token_holds_only_in_the_stream_its_call_read() {
    let (prefix, backend) = store().await;
    let got = leased(&backend, 2).await;
    let release = jobs_core::ReleaseParams {
        items: vec![jobs_core::Release {
            lease: got[0].lease(),
            run_at: None,
        }],
        now: at(1),
    };
    assert_eq!(backend.release(release).await.unwrap(), vec![true]);
    let mut conn = raw_connection().await;
    let current: String = redis::cmd("HGET")
        .arg(format!("{{{prefix}:s}}:ids"))
        .arg(got[0].record.id.0.simple().to_string())
        .query_async(&mut conn)
        .await
        .unwrap();
    let (ms, seq) = current
        .strip_prefix('r')
        .and_then(|e| e.split_once('-'))
        .expect("an entry of xr");
    let (ms, seq): (u128, u128) = (ms.parse().unwrap(), seq.parse().unwrap());
    // The call and queue tag of the fetch, which read `x`, with the entry in `xr`.
    let kept = got[1].token.0.as_u128() & !(((1 << 42) - 1) << 64 | 0xffff_ffff);
    let crossed = LeaseToken(uuid::Uuid::from_u128(kept | ms << 64 | seq));
    let lease = LeaseRef {
        id: got[0].record.id,
        token: crossed,
    };
    let accepted = backend
        .complete(CompleteParams {
            items: vec![done(lease)],
            now: at(2),
        })
        .await
        .unwrap();
    assert_eq!(accepted, vec![false]);
    let c = counts(&backend).await;
    assert_eq!((c.pending, c.running, c.completed), (1, 1, 0));
}

/// A stored job whose `j` is malformed, whose payload is not JSON, or whose bytes are not
/// UTF-8 text, is failed dead by the fetch that leases it, and the healthy jobs of that fetch
/// are leased as if it were not there.
#[tokio::test]
async fn a_corrupt_entry_dies_alone_and_the_rest_of_its_batch_runs() {
    let (prefix, backend) = store().await;
    let enqueue = |job: jobs_core::NewJob| {
        backend.enqueue(EnqueueParams {
            jobs: vec![job],
            now: t0(),
        })
    };
    let (first, last) = (ready("s"), ready("s"));
    enqueue(first.clone()).await.unwrap();
    // Three corrupt entries between them, written as an enqueue writes one.
    let base = format!("{{{prefix}:s}}:");
    let mut conn = raw_connection().await;
    let (bad_shape, bad_payload, bad_bytes) = (JobId::new(), JobId::new(), JobId::new());
    let meta = "3|f5||bad";
    let run_at = t0().timestamp_micros();
    let packed = |id: JobId, length: usize, payload: &[u8]| {
        let mut j = format!("{}{run_at}:{length}:{meta}", id.0.simple()).into_bytes();
        j.extend_from_slice(payload);
        j
    };
    let corrupt = [
        (bad_shape, packed(bad_shape, 99, b"{}")),
        (bad_payload, packed(bad_payload, meta.len(), b"not json {")),
        (bad_bytes, packed(bad_bytes, meta.len(), b"\"\xff\xfe\"")),
    ];
    for (id, j) in corrupt {
        add_raw_entry(&mut conn, &base, id, j).await;
    }
    enqueue(last.clone()).await.unwrap();

    let got = backend.fetch(fetch(&["s"], 10, t0())).await.unwrap();
    let ids: Vec<JobId> = got.iter().map(|j| j.record.id).collect();
    assert_eq!(ids, [first.id, last.id]);
    let c = counts(&backend).await;
    assert_eq!((c.running, c.pending, c.dead), (2, 0, 3));

    let poisoned = backend
        .read(ReadParams { id: bad_payload })
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(poisoned.status, JobStatus::Dead);
    assert_eq!(poisoned.errors.len(), 1);
    assert_eq!(poisoned.errors[0].kind, ErrorKind::Decode);
    // A job whose fields cannot be taken apart, or read as text, reads as an error that says
    // so.
    for (id, says) in [(bad_shape, "malformed"), (bad_bytes, "UTF-8")] {
        let e = backend.read(ReadParams { id }).await.expect_err(says);
        assert!(e.to_string().contains(says), "{e}");
    }
}

/// Corrupt entries leased by a worker that was gone before it could fail their jobs (here read
/// into the group by hand, as a fetch reads them): one whose `j` the rescue cannot read dies
/// there, one it reads (its flaw is past the run_at and the most attempts) is pending again
/// and dies at the fetch that leases it, and the healthy job the worker held with them runs
/// again.
#[tokio::test]
async fn a_gone_workers_corrupt_entries_die_and_its_healthy_job_runs_again() {
    let (prefix, backend) = store().await;
    let healthy = ready("s");
    backend
        .enqueue(EnqueueParams {
            jobs: vec![healthy.clone()],
            now: t0(),
        })
        .await
        .unwrap();
    let base = format!("{{{prefix}:s}}:");
    let mut conn = raw_connection().await;
    let (unreadable, too_short) = (JobId::new(), JobId::new());
    let corrupt = [
        (unreadable, format!("{}no run_at", unreadable.0.simple())),
        (
            too_short,
            format!(
                "{}{}:99:3|f5||bad{{}}",
                too_short.0.simple(),
                t0().timestamp_micros()
            ),
        ),
    ];
    for (id, j) in corrupt {
        add_raw_entry(&mut conn, &base, id, j).await;
    }
    // All three read into the group under the worker's name, counted as a fetch counts them.
    let gone = "gone-worker";
    let _: () = redis::pipe()
        .hincr(format!("{base}counts"), "r", 3)
        .hincr(format!("{base}counts"), "p", -3)
        .hincr(format!("{base}counts"), "q", -3)
        .cmd("XREADGROUP")
        .arg("GROUP")
        .arg("g")
        .arg(gone)
        .arg("COUNT")
        .arg(10)
        .arg("STREAMS")
        .arg(format!("{base}x"))
        .arg(">")
        .ignore()
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(counts(&backend).await.running, 3);

    let mut rescued = backend
        .rescue(jobs_core::RescueParams {
            target: jobs_core::RescueTarget::Workers(vec![gone.into()]),
            limit: 100,
            error: ErrorReport::new(ErrorKind::LeaseLost, "worker gone"),
            now: at(1_000),
        })
        .await
        .unwrap();
    rescued.sort_unstable();
    let mut all = vec![healthy.id, unreadable, too_short];
    all.sort_unstable();
    assert_eq!(rescued, all);
    let c = counts(&backend).await;
    assert_eq!((c.running, c.pending, c.dead), (0, 2, 1));

    let again = backend.fetch(fetch(&["s"], 10, at(1_000))).await.unwrap();
    let ids: Vec<JobId> = again.iter().map(|j| j.record.id).collect();
    assert_eq!(ids, [healthy.id]);
    assert_eq!(again[0].record.attempt, 2, "its lost attempt counts");
    let c = counts(&backend).await;
    assert_eq!((c.running, c.pending, c.dead), (1, 0, 2));
    for id in [unreadable, too_short] {
        let e = backend
            .read(ReadParams { id })
            .await
            .expect_err("malformed");
        assert!(e.to_string().contains("malformed"), "{e}");
    }
}

/// A completion of more jobs than one script call takes (a bulk completion through the
/// backend, not a worker's batch) goes in parts, each job accepted once.
#[tokio::test]
async fn ten_thousand_completions_in_one_call_are_all_accepted() {
    let (_prefix, backend) = store().await;
    let got = leased(&backend, 10_000).await;
    let items: Vec<Completion> = got.iter().map(|j| done(j.lease())).collect();
    let accepted = backend
        .complete(CompleteParams { items, now: at(1) })
        .await
        .unwrap();
    assert_eq!(accepted, vec![true; 10_000]);
    let c = counts(&backend).await;
    assert_eq!((c.running, c.completed), (0, 10_000));
}
