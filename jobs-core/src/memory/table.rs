//! The memory store's records by id, the active jobs apart from the finished ones.
//!
//! What reads the active jobs alone (a starting worker's check of stored versions, a list of
//! pending or running jobs, the waiting payloads a test asserts on) walks the active table, not
//! every record retained: with a million finished jobs kept, a walk of all of them holds the
//! store's lock for about 30 ms. And the hot path (enqueue, fetch, complete) looks its jobs up in
//! the small table; a job meets the large one once, when it finishes.

use crate::fast_hash::HashMap;
use crate::model::{JobId, JobRecord};

/// The stored records, each in the table of its status: active (waiting, scheduled, pending,
/// running) or finished (completed, dead, cancelled).
///
/// Boxed: a table holds a pointer per job rather than a whole record, so with a million jobs
/// retained it stays a few dozen MB, and growing it or moving a job between the tables moves
/// pointers, not records.
///
/// A completed record keeps the lease it was completed under, so that a completion repeated
/// under it is recognised as applied (no table of tokens beside the records, which a million
/// retained jobs would fill). Reads show no lease but a running job's (`outward`).
#[derive(Default)]
pub(super) struct Jobs {
    active: HashMap<JobId, Box<JobRecord>>,
    finished: HashMap<JobId, Box<JobRecord>>,
}

impl Jobs {
    /// The table for a record of `finished` status.
    fn table(&mut self, finished: bool) -> &mut HashMap<JobId, Box<JobRecord>> {
        if finished {
            &mut self.finished
        } else {
            &mut self.active
        }
    }

    /// Job `id`'s record.
    pub(super) fn get(&self, id: &JobId) -> Option<&JobRecord> {
        (self.active.get(id))
            .or_else(|| self.finished.get(id))
            .map(|r| &**r)
    }

    /// Stores a new record.
    pub(super) fn insert(&mut self, record: JobRecord) {
        let finished = record.status.is_finished();
        self.table(finished).insert(record.id, Box::new(record));
    }

    /// Takes job `id`'s record out.
    pub(super) fn remove(&mut self, id: &JobId) -> Option<JobRecord> {
        (self.active.remove(id))
            .or_else(|| self.finished.remove(id))
            .map(|r| *r)
    }

    /// Changes job `id`'s record through `change`, moving it to the other table when its status
    /// crosses between active and finished.
    pub(super) fn update<T>(
        &mut self,
        id: &JobId,
        change: impl FnOnce(&mut JobRecord) -> T,
    ) -> Option<T> {
        let (record, was_finished) = match self.active.get_mut(id) {
            Some(record) => (record, false),
            None => (self.finished.get_mut(id)?, true),
        };
        let out = change(record);
        let finished = record.status.is_finished();
        if finished != was_finished {
            let record = self.table(was_finished).remove(id).expect("just changed");
            self.table(finished).insert(*id, record);
        }
        Some(out)
    }

    /// The active jobs' records, in no order.
    pub(super) fn active(&self) -> impl Iterator<Item = &JobRecord> {
        self.active.values().map(|r| &**r)
    }

    /// Every record, in no order.
    pub(super) fn all(&self) -> impl Iterator<Item = &JobRecord> {
        self.active().chain(self.finished.values().map(|r| &**r))
    }

    /// How many jobs are stored.
    pub(super) fn len(&self) -> usize {
        self.active.len() + self.finished.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::JobStatus;

    fn record(status: JobStatus) -> JobRecord {
        let mut record = crate::fixtures::record(0);
        record.status = status;
        record
    }

    fn sizes(jobs: &Jobs) -> (usize, usize) {
        (jobs.active.len(), jobs.finished.len())
    }

    #[test]
    fn a_record_moves_between_the_tables_as_its_status_crosses() {
        let mut jobs = Jobs::default();
        let r = record(JobStatus::Pending);
        let id = r.id;
        jobs.insert(r);
        assert_eq!(sizes(&jobs), (1, 0));

        jobs.update(&id, |r| r.status = JobStatus::Running);
        assert_eq!(sizes(&jobs), (1, 0));
        jobs.update(&id, |r| r.status = JobStatus::Dead);
        assert_eq!(sizes(&jobs), (0, 1));
        assert_eq!(jobs.get(&id).map(|r| r.status), Some(JobStatus::Dead));
        assert_eq!(jobs.active().count(), 0);

        // A dead job retried is active again.
        jobs.update(&id, |r| r.status = JobStatus::Pending);
        assert_eq!(sizes(&jobs), (1, 0));
        assert_eq!(jobs.active().map(|r| r.id).collect::<Vec<_>>(), [id]);
        assert_eq!(jobs.remove(&id).map(|r| r.id), Some(id));
        assert_eq!((jobs.len(), jobs.all().count()), (0, 0));
        assert_eq!(jobs.update(&id, |_| ()), None, "gone");
    }

    #[test]
    fn a_finished_record_is_stored_with_the_finished() {
        let mut jobs = Jobs::default();
        let (done, waiting) = (record(JobStatus::Completed), record(JobStatus::Scheduled));
        let (done_id, waiting_id) = (done.id, waiting.id);
        jobs.insert(done);
        jobs.insert(waiting);
        assert_eq!(sizes(&jobs), (1, 1));
        let active: Vec<JobId> = jobs.active().map(|r| r.id).collect();
        assert_eq!(active, [waiting_id]);
        let mut all: Vec<JobId> = jobs.all().map(|r| r.id).collect();
        all.sort_unstable();
        let mut expected = vec![done_id, waiting_id];
        expected.sort_unstable();
        assert_eq!(all, expected);
        assert_eq!(
            jobs.get(&done_id).map(|r| r.status),
            Some(JobStatus::Completed)
        );
        assert_eq!(jobs.len(), 2);
    }
}
