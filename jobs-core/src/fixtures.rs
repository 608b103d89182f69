//! Records for the crate's unit tests.

use crate::model::{JobId, JobRecord, NewJob};
use crate::Backoff;

/// A pending job of name `x` in queue `q`, due now, at `priority`.
pub(crate) fn record(priority: i16) -> JobRecord {
    let now = chrono::Utc::now();
    JobRecord::new(
        NewJob {
            id: JobId::new(),
            name: "x".into(),
            queue: "q".into(),
            payload: serde_json::value::RawValue::from_string("{}".into()).unwrap(),
            version: 1,
            priority,
            run_at: now,
            max_attempts: 1,
            backoff: Backoff::default(),
            timeout: None,
            unique_key: None,
            tags: Vec::new(),
            trace_context: None,
            key_limits: None,
            coalesce: None,
            step: None,
        },
        now,
    )
}
