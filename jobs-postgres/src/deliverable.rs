//! The producer's side of deliveries (see [`offers`](crate::offers)): which single enqueues
//! try the schema's `deliver_one` function, and the record they hand it.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};

use chrono::SubsecRound;
use jobs_core::{Error, JobRecord, JobStatus, NewJob, Timestamp};

/// The longest record an enqueue offers for delivery: its notification, with the lease and
/// the names around it, must stay under PostgreSQL's 8,000 bytes (the function checks).
const RECORD_MAX: usize = 7_000;

/// The record of `job`, enqueued at `now`, as JSON for an offer to take (see migration 0020);
/// `None` when no offer may: the job waits for its time, has key limits or is a workflow step,
/// or its record is too long for a notification.
pub(crate) fn record(job: &NewJob, now: Timestamp) -> Result<Option<String>, Error> {
    if job.initial_status(now) != JobStatus::Pending
        || job.key_limits.is_some()
        || job.step.is_some()
        || job.unique_key.is_some()
        || job.payload.get().len() > RECORD_MAX
    {
        return Ok(None);
    }
    // Its times as the store keeps them, in whole microseconds.
    let mut record = JobRecord::new(job.clone(), now.trunc_subsecs(6));
    record.run_at = record.run_at.trunc_subsecs(6);
    let record = serde_json::to_string(&record)?;
    Ok((record.len() <= RECORD_MAX).then_some(record))
}

/// The queues in which a producer's last enqueue saw no offer standing: an enqueue tries to
/// deliver its job (the dearer `deliver_one`) in the others only, so that a queue whose workers
/// are all busy pays nothing for offers. Once a worker of such a queue falls idle, the next job
/// there is stored plainly (and wakes it), and its answer makes the one after it try.
#[derive(Debug, Default)]
pub(crate) struct OfferedQueues(Mutex<HashSet<String>>);

impl OfferedQueues {
    /// Whether an enqueue into `queue` tries to deliver: its last one there did not see that no
    /// offer stood.
    pub(crate) fn worth_trying(&self, queue: &str) -> bool {
        !self.quiet().contains(queue)
    }

    /// What the last enqueue into `queue` saw: whether an offer stood there.
    pub(crate) fn saw(&self, queue: &str, offered: bool) {
        let mut quiet = self.quiet();
        if offered == quiet.contains(queue) {
            if offered {
                quiet.remove(queue);
            } else {
                quiet.insert(queue.to_string());
            }
        }
    }

    fn quiet(&self) -> MutexGuard<'_, HashSet<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
