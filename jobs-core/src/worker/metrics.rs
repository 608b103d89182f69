//! The worker's metric handles (see [`crate::metrics`]): registered once per queue and name, on
//! first use, and looked up without a lock or an allocation, so recording costs a job a few
//! atomic operations. Without the feature `metrics` every type here is empty and every call
//! does nothing.

pub(crate) use imp::*;

#[cfg(feature = "metrics")]
mod imp {
    use std::borrow::Cow;
    use std::collections::HashMap;
    use std::hash::{BuildHasherDefault, Hasher};
    use std::sync::OnceLock;
    use std::time::Instant;

    use ::metrics::{counter, gauge, histogram, Counter, Gauge, Histogram};
    use tokio_util::sync::CancellationToken;

    use crate::backend::{Backend, CountsParams, ReadParams};
    use crate::clock::Clock;
    use crate::metrics::*;
    use crate::model::{JobId, JobStatus, QueueCounts, Timestamp};

    use crate::any::AnyBackend;

    /// FNV-1a: the keys are the worker's own queues and names, short and fixed at start.
    #[derive(Default)]
    pub(crate) struct Fnv(u64);

    impl Hasher for Fnv {
        fn finish(&self) -> u64 {
            self.0
        }

        fn write(&mut self, bytes: &[u8]) {
            let mut hash = if self.0 == 0 {
                0xcbf2_9ce4_8422_2325
            } else {
                self.0
            };
            for byte in bytes {
                hash ^= u64::from(*byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
            self.0 = hash;
        }
    }

    type FastMap<V> = HashMap<String, V, BuildHasherDefault<Fnv>>;

    /// The handles of one running worker: per queue and job name, and the queue-depth gauges.
    pub(crate) struct WorkerMetrics {
        jobs: FastMap<FastMap<OnceLock<JobMetrics>>>,
    }

    impl WorkerMetrics {
        /// Slots for every pair of `queues` and `names`, registered when first used.
        pub(crate) fn new<'a>(queues: &[String], names: impl Iterator<Item = &'a String>) -> Self {
            describe();
            let names: Vec<&String> = names.collect();
            let jobs = queues
                .iter()
                .map(|queue| {
                    let slots = names
                        .iter()
                        .map(|name| ((*name).clone(), OnceLock::new()))
                        .collect();
                    (queue.clone(), slots)
                })
                .collect();
            WorkerMetrics { jobs }
        }

        /// The handles of `queue`'s jobs named `name`.
        pub(crate) fn job(&self, queue: &str, name: &str) -> Cow<'_, JobMetrics> {
            match self.jobs.get(queue).and_then(|names| names.get(name)) {
                Some(slot) => Cow::Borrowed(slot.get_or_init(|| JobMetrics::register(queue, name))),
                // Only a backend that hands out jobs this worker did not ask for.
                None => Cow::Owned(JobMetrics::register(queue, name)),
            }
        }
    }

    /// The handles of one queue's jobs of one name.
    #[derive(Clone)]
    pub(crate) struct JobMetrics {
        started: Counter,
        completed: Counter,
        failed: Counter,
        retried: Counter,
        dead: Counter,
        run: Histogram,
        pickup: Histogram,
        to_finish: Histogram,
    }

    impl JobMetrics {
        fn register(queue: &str, name: &str) -> Self {
            let labels = [
                (LABEL_QUEUE, queue.to_owned()),
                (LABEL_NAME, name.to_owned()),
            ];
            JobMetrics {
                started: counter!(STARTED, &labels),
                completed: counter!(COMPLETED, &labels),
                failed: counter!(FAILED, &labels),
                retried: counter!(RETRIED, &labels),
                dead: counter!(DEAD, &labels),
                run: histogram!(RUN_SECONDS, &labels),
                pickup: histogram!(PICKUP_SECONDS, &labels),
                to_finish: histogram!(ENQUEUE_TO_FINISH_SECONDS, &labels),
            }
        }

        /// A handler starts now, on `clock`, for a job due at `run_at`: counts it and samples
        /// its pickup latency; the timer measures its run.
        pub(crate) fn started(&self, clock: &dyn Clock, run_at: Timestamp) -> RunTimer {
            self.started.increment(1);
            self.pickup.record(seconds_since(run_at, clock.now()));
            RunTimer(Instant::now())
        }

        /// The handler started with `timer` returned.
        pub(crate) fn ran(&self, timer: RunTimer) {
            self.run.record(timer.0.elapsed().as_secs_f64());
        }

        /// The job, enqueued at `created_at`, finishes now (completed or dead).
        pub(crate) fn finished(&self, clock: &dyn Clock, created_at: Timestamp) {
            self.to_finish
                .record(seconds_since(created_at, clock.now()));
        }

        /// The store accepted a completion.
        pub(crate) fn completed(&self) {
            self.completed.increment(1);
        }

        /// The store accepted a failure: `retried` or dead.
        pub(crate) fn failed(&self, retried: bool) {
            self.failed.increment(1);
            if retried {
                self.retried.increment(1);
            } else {
                self.dead.increment(1);
            }
        }
    }

    /// When a handler started.
    pub(crate) struct RunTimer(Instant);

    /// Seconds from `from` to `to`, never negative.
    fn seconds_since(from: Timestamp, to: Timestamp) -> f64 {
        (to - from)
            .to_std()
            .map_or(0.0, |elapsed| elapsed.as_secs_f64())
    }

    /// Counts the jobs a rescue took back, by the queue each one's record names (`""` for one
    /// already deleted or unreadable).
    pub(crate) async fn rescued(backend: &AnyBackend, ids: &[JobId]) {
        let mut by_queue: Vec<(String, u64)> = Vec::new();
        for &id in ids {
            let queue = match backend.read(ReadParams { id }).await {
                Ok(Some(job)) => job.queue.to_string(),
                _ => String::new(),
            };
            match by_queue.iter_mut().find(|(q, _)| *q == queue) {
                Some((_, n)) => *n += 1,
                None => by_queue.push((queue, 1)),
            }
        }
        for (queue, n) in by_queue {
            count_by_queue(RESCUED, &queue, n);
        }
    }

    /// Sets `jobs_queue_depth` for `queues` from the store's counts, now and every
    /// [`QUEUE_DEPTH_EVERY`], until `stop`.
    pub(crate) async fn keep_queue_depth(
        backend: AnyBackend,
        queues: Vec<String>,
        stop: CancellationToken,
    ) {
        let gauges: Vec<(String, Vec<(JobStatus, Gauge)>)> = queues
            .into_iter()
            .map(|queue| {
                let of_status = JobStatus::ALL
                    .iter()
                    .map(|&status| {
                        let gauge = gauge!(
                            QUEUE_DEPTH,
                            LABEL_QUEUE => queue.clone(),
                            LABEL_STATUS => status.as_str()
                        );
                        (status, gauge)
                    })
                    .collect();
                (queue, of_status)
            })
            .collect();
        let mut timer = tokio::time::interval(QUEUE_DEPTH_EVERY);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                _ = stop.cancelled() => return,
                _ = timer.tick() => {}
            }
            for (queue, of_status) in &gauges {
                let params = CountsParams {
                    queue: queue.clone(),
                };
                match backend.counts(params).await {
                    Ok(counts) => set_depth(of_status, &counts),
                    Err(e) => {
                        tracing::debug!(error = %e, queue, "could not count the queue's jobs")
                    }
                }
            }
        }
    }

    fn set_depth(gauges: &[(JobStatus, Gauge)], counts: &QueueCounts) {
        for (status, gauge) in gauges {
            gauge.set(counts.get(*status) as f64);
        }
    }
}

#[cfg(not(feature = "metrics"))]
mod imp {
    use crate::clock::Clock;
    use crate::model::{JobId, Timestamp};

    use crate::any::AnyBackend;

    /// Nothing: the feature `metrics` is off.
    pub(crate) struct WorkerMetrics;

    impl WorkerMetrics {
        #[inline(always)]
        pub(crate) fn new<'a>(_: &[String], _: impl Iterator<Item = &'a String>) -> Self {
            WorkerMetrics
        }

        #[inline(always)]
        pub(crate) fn job(&self, _: &str, _: &str) -> JobMetrics {
            JobMetrics
        }
    }

    /// Nothing: the feature `metrics` is off.
    pub(crate) struct JobMetrics;

    impl JobMetrics {
        #[inline(always)]
        pub(crate) fn started(&self, _: &dyn Clock, _: Timestamp) -> RunTimer {
            RunTimer
        }

        #[inline(always)]
        pub(crate) fn ran(&self, _: RunTimer) {}

        #[inline(always)]
        pub(crate) fn finished(&self, _: &dyn Clock, _: Timestamp) {}

        #[inline(always)]
        pub(crate) fn completed(&self) {}

        #[inline(always)]
        pub(crate) fn failed(&self, _: bool) {}
    }

    /// Nothing: the feature `metrics` is off.
    pub(crate) struct RunTimer;

    #[inline(always)]
    pub(crate) async fn rescued(_: &AnyBackend, _: &[JobId]) {}
}
