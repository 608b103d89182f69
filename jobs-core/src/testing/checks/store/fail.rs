//! Failed attempts: retries, dead jobs, and the error history with kinds and source chains.

use super::*;

/// A failure goes back to pending at retry_at; the last goes dead; every error is kept.
pub async fn fail_retries_then_dies_with_every_error(b: AnyBackend) {
    let mut job = new_job("failing");
    job.max_attempts = 2;
    let id = put(&b, job).await;
    let first = fetch_one(&b, t0()).await;
    assert!(fail(&b, &first, "boom 1", Some(at(10_000)), at(100)).await);
    let r = record(&b, id).await;
    assert_eq!(
        (r.status, r.run_at, r.attempt, r.lease.is_none()),
        (JobStatus::Pending, at(10_000), 1, true)
    );
    assert_eq!(
        r.errors,
        vec![AttemptError {
            attempt: 1,
            at: at(100),
            kind: ErrorKind::Retryable,
            message: "boom 1".into(),
            chain: Vec::new(),
        }]
    );

    assert!(
        fetch(&b, 5, at(9_999)).await.is_empty(),
        "not before retry_at"
    );
    let second = fetch_one(&b, at(10_000)).await;
    assert_eq!(second.record.attempt, 2);
    assert!(fail(&b, &second, "boom 2", None, at(10_100)).await);
    let dead = record(&b, id).await;
    assert_eq!(
        (dead.status, dead.finished_at),
        (JobStatus::Dead, Some(at(10_100)))
    );
    let attempts: Vec<(u32, &str)> = dead
        .errors
        .iter()
        .map(|e| (e.attempt, e.message.as_str()))
        .collect();
    assert_eq!(attempts, vec![(1, "boom 1"), (2, "boom 2")]);
    let dead_ones = JobFilter::new().queue(QUEUE).status(JobStatus::Dead);
    assert_eq!(listed(&b, dead_ones).await, vec![id]);
    assert_eq!(counts(&b).await.dead, 1);
}

/// Each attempt's error reads back with its kind, message and source chain, whatever the kind.
pub async fn fail_stores_each_error_kind_and_chain(b: AnyBackend) {
    let kinds = [
        ErrorKind::Retryable,
        ErrorKind::Fatal,
        ErrorKind::Timeout,
        ErrorKind::Panic,
        ErrorKind::LeaseLost,
        ErrorKind::Decode,
    ];
    let mut job = new_job("kinds");
    job.max_attempts = kinds.len() as u32 + 1;
    let id = put(&b, job).await;
    let mut expected = Vec::new();
    for (i, kind) in kinds.into_iter().enumerate() {
        let now = at(i as i64 * 1_000);
        let leased = fetch_one(&b, now).await;
        let chain: Vec<String> = (0..i % 3).map(|depth| format!("cause {depth}")).collect();
        let report = ErrorReport {
            kind,
            message: format!("{kind}: ‘quoted’ \"text\"; ends here"),
            chain,
        };
        assert!(fail_with(&b, &leased, report.clone(), Some(now), now).await);
        expected.push(AttemptError::new(i as u32 + 1, now, report));
    }
    let r = record(&b, id).await;
    assert_eq!(r.errors, expected);
    assert_eq!(r.last_error(), expected.last());
    assert_eq!(
        r.status,
        JobStatus::Pending,
        "retry_at decides, not the kind"
    );
}

/// A dead job says why it is dead: fatal (its last error could not be retried, even on its
/// last attempt) or out of attempts.
pub async fn fail_dead_reason_tells_fatal_from_out_of_attempts(b: AnyBackend) {
    let mut job = new_job("dying");
    job.max_attempts = 1;
    let fatal = put(&b, job.clone()).await;
    let leased = fetch_one(&b, t0()).await;
    let report = ErrorReport::new(ErrorKind::Fatal, "card declined");
    assert!(fail_with(&b, &leased, report, None, at(1)).await);

    job.id = JobId::new();
    job.max_attempts = 3;
    let undecodable = put(&b, job.clone()).await;
    let leased = fetch_one(&b, at(2)).await;
    let report = ErrorReport::new(ErrorKind::Decode, "missing field `n`");
    assert!(fail_with(&b, &leased, report, None, at(3)).await);

    job.id = JobId::new();
    job.max_attempts = 2;
    let exhausted = put(&b, job).await;
    let leased = fetch_one(&b, at(4)).await;
    assert!(fail(&b, &leased, "try 1", Some(at(5)), at(5)).await);
    assert_eq!(record(&b, exhausted).await.dead_reason(), None, "not dead");
    let leased = fetch_one(&b, at(6)).await;
    assert!(fail(&b, &leased, "try 2", None, at(7)).await);

    let reasons = [
        record(&b, fatal).await.dead_reason(),
        record(&b, undecodable).await.dead_reason(),
        record(&b, exhausted).await.dead_reason(),
    ];
    assert_eq!(
        reasons,
        [
            Some(DeadReason::Fatal),
            Some(DeadReason::Fatal),
            Some(DeadReason::OutOfAttempts)
        ]
    );
}
