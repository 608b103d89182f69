//! The memory store's indexes of its jobs, kept in step with their records: per queue its
//! waiting jobs in run order, its finished jobs and its counts by status; and the running and
//! dead jobs, the unique keys held and the running jobs of each limited key.
//!
//! A queue's indexes live together, so a job that changes status finds them with one lookup of
//! its queue's name, not one per index and count.

use std::collections::BTreeSet;

use super::finished::Finished;
use crate::fast_hash::{HashMap, HashSet};
use crate::model::{JobId, JobRecord, JobStatus, QueueCounts};
use crate::order::RunOrder;

/// Every index of the stored jobs.
#[derive(Default)]
pub(super) struct Indexes {
    /// Each queue's own indexes, by name.
    pub(super) queues: HashMap<String, QueueIndex>,
    /// The indexes by job and by key, across queues.
    pub(super) sets: JobSets,
}

/// One queue's indexes.
#[derive(Default)]
pub(super) struct QueueIndex {
    /// Pending and scheduled jobs, in run order.
    pub(super) waiting: BTreeSet<RunOrder>,
    /// Completed and cancelled jobs by finish time, for retention.
    pub(super) finished: Finished,
    /// Jobs by status.
    pub(super) counts: QueueCounts,
}

/// The indexes by job and by key, across queues.
#[derive(Default)]
pub(super) struct JobSets {
    /// Running jobs. A set, not an order by lease expiry: a rescue scans them (they are few),
    /// where an ordered index would cost every lease and every outcome a B-tree's insert or
    /// removal.
    pub(super) running: HashSet<JobId>,
    /// Dead jobs, in id order: a page of them (the dashboard's dead page, say) reads from its
    /// cursor on and stops when full, whatever else is stored.
    pub(super) dead: BTreeSet<JobId>,
    /// Unique keys held by active jobs, per queue.
    pub(super) unique: HashMap<(String, String), JobId>,
    /// Running jobs per (queue, key) of jobs with key limits.
    pub(super) key_running: HashMap<(String, String), u32>,
}

/// The entry of `queue`, made on first use (without allocating the key on every call).
fn per_queue<'m>(map: &'m mut HashMap<String, QueueIndex>, queue: &str) -> &'m mut QueueIndex {
    if !map.contains_key(queue) {
        map.insert(queue.to_string(), QueueIndex::default());
    }
    map.get_mut(queue).expect("just inserted")
}

/// The entry of a stored record's queue, made when the record was indexed: found with one
/// lookup.
fn of_stored<'m>(map: &'m mut HashMap<String, QueueIndex>, r: &JobRecord) -> &'m mut QueueIndex {
    (map.get_mut(&*r.queue)).expect("a stored job's queue is indexed")
}

impl Indexes {
    /// Indexes a new record, and counts it.
    pub(super) fn index(&mut self, r: &JobRecord) {
        let q = per_queue(&mut self.queues, &r.queue);
        q.list(&mut self.sets, r);
        *q.counts.get_mut(r.status) += 1;
    }

    /// Takes a stored record out of every index, and out of its count.
    pub(super) fn unindex(&mut self, r: &JobRecord) {
        let q = of_stored(&mut self.queues, r);
        q.unlist(&mut self.sets, r);
        let count = q.counts.get_mut(r.status);
        *count = count.saturating_sub(1);
    }

    /// Changes `r` through `change` (never its queue), moving it between the indexes and counts
    /// of its status before and after.
    pub(super) fn changing<T>(
        &mut self,
        r: &mut JobRecord,
        change: impl FnOnce(&mut JobRecord) -> T,
    ) -> T {
        let status = r.status;
        let q = of_stored(&mut self.queues, r);
        q.unlist(&mut self.sets, r);
        let out = change(r);
        q.list(&mut self.sets, r);
        if r.status != status {
            let left = q.counts.get_mut(status);
            *left = left.saturating_sub(1);
            *q.counts.get_mut(r.status) += 1;
        }
        out
    }

    /// The counts of `queue`'s jobs.
    pub(super) fn counts(&self, queue: &str) -> QueueCounts {
        self.queues.get(queue).map(|q| q.counts).unwrap_or_default()
    }
}

impl QueueIndex {
    /// Takes a record out of the index of its current status.
    fn unlist(&mut self, sets: &mut JobSets, r: &JobRecord) {
        match r.status {
            JobStatus::Scheduled | JobStatus::Pending => {
                let key = RunOrder::of(r);
                // A fetch leases waiting jobs from the front, in order: the first is taken
                // without the comparisons of a search down the tree.
                if self.waiting.first() == Some(&key) {
                    self.waiting.pop_first();
                } else {
                    self.waiting.remove(&key);
                }
            }
            JobStatus::Running => {
                sets.running.remove(&r.id);
                if let Some(limits) = &r.key_limits {
                    let slot = (r.queue.to_string(), limits.key.clone());
                    if let Some(n) = sets.key_running.get_mut(&slot) {
                        *n -= 1;
                        if *n == 0 {
                            sets.key_running.remove(&slot);
                        }
                    }
                }
            }
            JobStatus::Completed | JobStatus::Cancelled => {
                if let Some(at) = r.finished_at {
                    self.finished.remove(at, r.id);
                }
            }
            JobStatus::Dead => {
                sets.dead.remove(&r.id);
            }
            JobStatus::Waiting => {}
        }
        if r.status.is_active() {
            if let Some(key) = &r.unique_key {
                let slot = (r.queue.to_string(), key.clone());
                if sets.unique.get(&slot) == Some(&r.id) {
                    sets.unique.remove(&slot);
                }
            }
        }
    }

    /// Puts a record into the index of its status.
    fn list(&mut self, sets: &mut JobSets, r: &JobRecord) {
        match r.status {
            JobStatus::Scheduled | JobStatus::Pending => {
                self.waiting.insert(RunOrder::of(r));
            }
            JobStatus::Running => {
                sets.running.insert(r.id);
                if let Some(limits) = &r.key_limits {
                    *sets
                        .key_running
                        .entry((r.queue.to_string(), limits.key.clone()))
                        .or_default() += 1;
                }
            }
            JobStatus::Completed | JobStatus::Cancelled => {
                if let Some(at) = r.finished_at {
                    self.finished.insert(at, r.id);
                }
            }
            JobStatus::Dead => {
                sets.dead.insert(r.id);
            }
            JobStatus::Waiting => {}
        }
        if r.status.is_active() {
            if let Some(key) = &r.unique_key {
                sets.unique.insert((r.queue.to_string(), key.clone()), r.id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::record;

    #[test]
    fn a_change_moves_a_job_between_its_queues_indexes_and_counts() {
        let mut idx = Indexes::default();
        let mut jobs: Vec<JobRecord> = (0..3).map(|_| record(0)).collect();
        for r in &jobs {
            idx.index(r);
        }
        let [first, middle, last] = &mut jobs[..] else {
            unreachable!()
        };
        // Leased from the front (taken first), cancelled from the middle (searched for).
        idx.changing(first, |r| r.status = JobStatus::Running);
        idx.changing(middle, |r| {
            r.status = JobStatus::Cancelled;
            r.finished_at = Some(r.run_at);
        });
        let q = &idx.queues["q"];
        assert_eq!(
            q.waiting.iter().map(RunOrder::id).collect::<Vec<_>>(),
            [last.id]
        );
        assert_eq!(
            q.finished
                .oldest_first()
                .map(|(_, id)| id)
                .collect::<Vec<_>>(),
            [middle.id]
        );
        assert_eq!(
            (q.counts.pending, q.counts.running, q.counts.cancelled),
            (1, 1, 1)
        );
        assert!(idx.sets.running.contains(&first.id));
        idx.unindex(first);
        assert!(idx.sets.running.is_empty());
        assert_eq!(idx.counts("q").running, 0);
        assert_eq!(idx.counts("elsewhere"), QueueCounts::default());
    }
}
