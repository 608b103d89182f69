//! The memory store's finished jobs of one queue, oldest first: what retention prunes and
//! `finished_since` counts.
//!
//! An outcome batch finishes its jobs at one moment, nearly always after every job already
//! there. So the ids are grouped by moment, and a job most often joins the newest group with a
//! push, where a B-tree keyed by moment and id compared its key with every key on the way down.

use std::collections::{BTreeMap, VecDeque};

use crate::model::{JobId, Timestamp};

/// Finished jobs by the moment they finished, each moment's in the order they came.
#[derive(Default)]
pub(super) struct Finished {
    by_moment: BTreeMap<Timestamp, VecDeque<JobId>>,
    len: usize,
}

impl Finished {
    /// Adds job `id`, finished `at`.
    pub(super) fn insert(&mut self, at: Timestamp, id: JobId) {
        match self.by_moment.last_entry() {
            Some(mut newest) if *newest.key() == at => newest.get_mut().push_back(id),
            _ => self.by_moment.entry(at).or_default().push_back(id),
        }
        self.len += 1;
    }

    /// Takes out job `id`, finished `at`, if it is there.
    pub(super) fn remove(&mut self, at: Timestamp, id: JobId) {
        let Some(ids) = self.by_moment.get_mut(&at) else {
            return;
        };
        // Retention takes the oldest, which come first.
        let Some(i) = ids.iter().position(|&x| x == id) else {
            return;
        };
        ids.remove(i);
        self.len -= 1;
        if ids.is_empty() {
            self.by_moment.remove(&at);
        }
    }

    /// How many jobs there are.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The jobs, oldest first, each with when it finished.
    pub(super) fn oldest_first(&self) -> impl Iterator<Item = (Timestamp, JobId)> + '_ {
        (self.by_moment.iter()).flat_map(|(at, ids)| ids.iter().map(move |&id| (*at, id)))
    }

    /// How many jobs finished at `since` or later.
    pub(super) fn count_since(&self, since: Timestamp) -> usize {
        self.by_moment
            .range(since..)
            .map(|(_, ids)| ids.len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn at(s: i64) -> Timestamp {
        Utc.timestamp_opt(s, 0).unwrap()
    }

    #[test]
    fn jobs_come_out_by_finish_time_then_arrival_whatever_order_they_finish_in() {
        let ids: Vec<JobId> = (0..5).map(|_| JobId::new()).collect();
        let mut f = Finished::default();
        f.insert(at(20), ids[0]);
        f.insert(at(20), ids[1]);
        // A batch written late: it finished before the one above.
        f.insert(at(10), ids[2]);
        f.insert(at(30), ids[3]);
        f.insert(at(20), ids[4]);
        let order: Vec<(Timestamp, JobId)> = f.oldest_first().collect();
        assert_eq!(
            order,
            [
                (at(10), ids[2]),
                (at(20), ids[0]),
                (at(20), ids[1]),
                (at(20), ids[4]),
                (at(30), ids[3]),
            ]
        );
        assert_eq!(
            (f.len(), f.count_since(at(20)), f.count_since(at(31))),
            (5, 4, 0)
        );
    }

    #[test]
    fn a_removed_job_leaves_its_moment_and_an_empty_moment_goes() {
        let (a, b, c) = (JobId::new(), JobId::new(), JobId::new());
        let mut f = Finished::default();
        f.insert(at(1), a);
        f.insert(at(1), b);
        f.insert(at(2), c);
        f.remove(at(1), b);
        f.remove(at(2), a); // not there at that moment: nothing changes
        assert_eq!(
            f.oldest_first().collect::<Vec<_>>(),
            [(at(1), a), (at(2), c)]
        );
        f.remove(at(1), a);
        assert_eq!((f.len(), f.by_moment.len()), (1, 1), "moment 1 is gone");
        assert_eq!(f.count_since(at(0)), 1);
    }
}
