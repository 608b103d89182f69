//! What the worker, enqueueing and the operations record through the
//! [`metrics`](https://docs.rs/metrics/0.24) facade (feature `metrics`; without it nothing is
//! recorded and the calls compile to nothing).
//!
//! Install any `metrics` recorder (the Prometheus exporter, say) before the worker starts and
//! these appear; the worker describes them (unit and help text) when it starts, or call
//! [`describe`] yourself after installing the recorder.
//!
//! | name | kind | labels | meaning |
//! | --- | --- | --- | --- |
//! | `jobs_enqueued_total` | counter | `queue`, `name` | jobs stored by `enqueue` / `enqueue_many`; a duplicate of an active unique key is not counted |
//! | `jobs_started_total` | counter | `queue`, `name` | attempts whose handler started |
//! | `jobs_completed_total` | counter | `queue`, `name` | completions the store accepted |
//! | `jobs_failed_total` | counter | `queue`, `name` | failed attempts (error, panic, timeout) the store accepted, retried or not |
//! | `jobs_retried_total` | counter | `queue`, `name` | failed attempts that will run again |
//! | `jobs_dead_total` | counter | `queue`, `name` | failed attempts that left the job dead (fatal or out of attempts) |
//! | `jobs_rescued_total` | counter | `queue` | running jobs taken back from a worker that stopped renewing its lease or is gone |
//! | `jobs_cancelled_total` | counter | `queue` | jobs cancelled through [`Operations::cancel`](crate::Operations::cancel) and [`cancel_all`](crate::Operations::cancel_all) |
//! | `jobs_run_seconds` | histogram | `queue`, `name` | how long each started handler ran, whatever it ended in |
//! | `jobs_pickup_seconds` | histogram | `queue`, `name` | from the job's due time (`run_at`) to its handler's start, never negative |
//! | `jobs_enqueue_to_finish_seconds` | histogram | `queue`, `name` | from enqueue (`created_at`) to the outcome that finished the job: completed or dead |
//! | `jobs_queue_depth` | gauge | `queue`, `status` | the queue's jobs in each status (`scheduled`, `pending`, `running`, `completed`, `dead`, `cancelled`) |
//!
//! Notes:
//!
//! - The worker records the job metrics of the jobs it runs; each running worker refreshes
//!   `jobs_queue_depth` for its queues every [`QUEUE_DEPTH_EVERY`] from the store's counts
//!   (every worker of a queue sets the same values).
//! - `jobs_rescued_total` and `jobs_cancelled_total` carry no `name`: the caller does not know
//!   it. A rescue reads each rescued job to learn its queue; [`Operations::cancel`] reads the
//!   cancelled job; [`Operations::cancel_all`] counts under its filter's queue, or `queue=""`
//!   when the filter names none.
//! - A job a rescue sends dead (out of attempts) counts in `jobs_rescued_total`, not in
//!   `jobs_dead_total`; cron ticks are not counted in `jobs_enqueued_total`.
//! - `jobs_enqueue_to_finish_seconds` is sampled when the worker hands the outcome to the store,
//!   so a write the store then refuses (the lease was lost) still leaves its sample.
//! - Time is the worker's clock (a `ManualClock` in tests); run time is measured with the
//!   monotonic clock.
//!
//! [`Operations::cancel`]: crate::Operations::cancel
//! [`Operations::cancel_all`]: crate::Operations::cancel_all

use std::time::Duration;

/// Counter: jobs stored by enqueueing, duplicates of an active unique key not included.
pub const ENQUEUED: &str = "jobs_enqueued_total";
/// Counter: attempts whose handler started.
pub const STARTED: &str = "jobs_started_total";
/// Counter: completions the store accepted.
pub const COMPLETED: &str = "jobs_completed_total";
/// Counter: failed attempts, retried or not.
pub const FAILED: &str = "jobs_failed_total";
/// Counter: failed attempts that will run again.
pub const RETRIED: &str = "jobs_retried_total";
/// Counter: failed attempts that left the job dead.
pub const DEAD: &str = "jobs_dead_total";
/// Counter: running jobs rescued from a lapsed lease or a gone worker (label `queue` only).
pub const RESCUED: &str = "jobs_rescued_total";
/// Counter: jobs cancelled (label `queue` only).
pub const CANCELLED: &str = "jobs_cancelled_total";
/// Histogram, seconds: handler run time.
pub const RUN_SECONDS: &str = "jobs_run_seconds";
/// Histogram, seconds: from the job's due time to its handler's start.
pub const PICKUP_SECONDS: &str = "jobs_pickup_seconds";
/// Histogram, seconds: from enqueue to the job's completion or death.
pub const ENQUEUE_TO_FINISH_SECONDS: &str = "jobs_enqueue_to_finish_seconds";
/// Gauge: a queue's jobs in one status (labels `queue`, `status`).
pub const QUEUE_DEPTH: &str = "jobs_queue_depth";

/// The label of the queue.
pub const LABEL_QUEUE: &str = "queue";
/// The label of the job's stored name.
pub const LABEL_NAME: &str = "name";
/// The label of a job status, on [`QUEUE_DEPTH`].
pub const LABEL_STATUS: &str = "status";

/// How often a running worker refreshes [`QUEUE_DEPTH`] for its queues.
pub const QUEUE_DEPTH_EVERY: Duration = Duration::from_secs(5);

/// Describes every metric (unit and help text) to the installed recorder. The worker calls it
/// when it starts; calling it again is harmless. Does nothing without the feature `metrics`.
pub fn describe() {
    #[cfg(feature = "metrics")]
    {
        use ::metrics::{describe_counter, describe_gauge, describe_histogram, Unit};

        describe_counter!(
            ENQUEUED,
            Unit::Count,
            "Jobs stored by enqueueing, duplicates of an active unique key not included."
        );
        describe_counter!(STARTED, Unit::Count, "Attempts whose handler started.");
        describe_counter!(COMPLETED, Unit::Count, "Completions the store accepted.");
        describe_counter!(
            FAILED,
            Unit::Count,
            "Failed attempts (error, panic or timeout), retried or not."
        );
        describe_counter!(RETRIED, Unit::Count, "Failed attempts that will run again.");
        describe_counter!(
            DEAD,
            Unit::Count,
            "Failed attempts that left the job dead (fatal or out of attempts)."
        );
        describe_counter!(
            RESCUED,
            Unit::Count,
            "Running jobs rescued from a lapsed lease or a gone worker."
        );
        describe_counter!(CANCELLED, Unit::Count, "Jobs cancelled.");
        describe_histogram!(RUN_SECONDS, Unit::Seconds, "How long each handler ran.");
        describe_histogram!(
            PICKUP_SECONDS,
            Unit::Seconds,
            "From the job's due time (run_at) to its handler's start."
        );
        describe_histogram!(
            ENQUEUE_TO_FINISH_SECONDS,
            Unit::Seconds,
            "From enqueue to the job's completion or death."
        );
        describe_gauge!(
            QUEUE_DEPTH,
            Unit::Count,
            "A queue's jobs in one status, refreshed by each running worker."
        );
    }
}

/// Counts `n` jobs of `queue` under the queue-labelled counter `metric`.
#[cfg(feature = "metrics")]
pub(crate) fn count_by_queue(metric: &'static str, queue: &str, n: u64) {
    if n > 0 {
        ::metrics::counter!(metric, LABEL_QUEUE => queue.to_owned()).increment(n);
    }
}

/// Counts the jobs that one enqueue call stores, by queue, for [`ENQUEUED`].
#[cfg(feature = "metrics")]
pub(crate) struct EnqueueCount {
    name: &'static str,
    /// The distinct queues of the call.
    queues: Vec<String>,
    /// Each job's index in `queues`.
    of_job: Vec<usize>,
}

#[cfg(feature = "metrics")]
impl EnqueueCount {
    /// Notes the queues of `jobs`, all of the job type named `name`, before they are sent.
    pub(crate) fn of(name: &'static str, jobs: &[crate::model::NewJob]) -> Self {
        let mut queues: Vec<String> = Vec::new();
        let of_job = jobs
            .iter()
            .map(|job| match queues.iter().position(|q| *q == job.queue) {
                Some(i) => i,
                None => {
                    queues.push(job.queue.clone());
                    queues.len() - 1
                }
            })
            .collect();
        EnqueueCount {
            name,
            queues,
            of_job,
        }
    }

    /// Counts the jobs the backend stored (`stored`, in the order sent), not the duplicates.
    pub(crate) fn stored(self, stored: &[crate::model::Enqueued]) {
        let mut counts = vec![0u64; self.queues.len()];
        for (&queue, stored) in self.of_job.iter().zip(stored) {
            if !stored.duplicate {
                counts[queue] += 1;
            }
        }
        for (queue, n) in self.queues.into_iter().zip(counts) {
            if n > 0 {
                ::metrics::counter!(ENQUEUED, LABEL_QUEUE => queue, LABEL_NAME => self.name)
                    .increment(n);
            }
        }
    }
}
