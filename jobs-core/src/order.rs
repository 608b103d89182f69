//! Keys that order jobs, made of plain integers: the ordered indexes (the memory store's waiting
//! jobs, the worker's run queue) compare keys at every level of a B-tree on every insert, and since
//! jobs mostly arrive at the end, each insert compares its key with every key of the nodes on
//! its way.
//! Integers compare in a few instructions where a timestamp's and a UUID's fields take many.

use uuid::Uuid;

use crate::model::{JobId, JobRecord, Timestamp};

/// A job's place in the run order: its priority, then when it is due, then its id (first in,
/// first out: ids are time-ordered).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RunOrder {
    priority: i16,
    due: Moment,
    id: Id,
}

impl RunOrder {
    /// The place of `record`'s job.
    pub(crate) fn of(record: &JobRecord) -> Self {
        RunOrder {
            priority: record.priority,
            due: record.run_at.into(),
            id: record.id.into(),
        }
    }

    /// The job's id.
    pub(crate) fn id(&self) -> JobId {
        self.id.into()
    }
}

/// A timestamp as whole seconds and nanoseconds since the epoch, which order as it does (a leap
/// second's nanoseconds run past a billion, after the second's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Moment {
    secs: i64,
    nanos: u32,
}

impl From<Timestamp> for Moment {
    fn from(t: Timestamp) -> Self {
        Moment {
            secs: t.timestamp(),
            nanos: t.timestamp_subsec_nanos(),
        }
    }
}

/// A job id as two halves, in the id's own order; halves keep keys 8-byte aligned, so a key
/// holds no padding that a `u128` would bring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Id(u64, u64);

impl From<JobId> for Id {
    fn from(id: JobId) -> Self {
        let (high, low) = id.0.as_u64_pair();
        Id(high, low)
    }
}

impl From<Id> for JobId {
    fn from(Id(high, low): Id) -> Self {
        JobId(Uuid::from_u64_pair(high, low))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::record;
    use chrono::{Duration, TimeZone, Utc};

    #[test]
    fn run_order_is_priority_then_due_then_id() {
        let now = Utc.with_ymd_and_hms(2026, 12, 5, 12, 0, 0).unwrap();
        let mut urgent = record(0);
        let mut early = record(5);
        let mut late = record(5);
        let mut later_id = record(5);
        early.run_at = now;
        late.run_at = now + Duration::nanoseconds(1);
        later_id.run_at = now;
        urgent.run_at = now + Duration::days(1);
        later_id.id = JobId::new();
        early.id = JobId(Uuid::from_u128(1));
        let mut keys = [&late, &later_id, &early, &urgent].map(RunOrder::of);
        keys.sort();
        let ids = keys.map(|k| k.id());
        assert_eq!(ids, [urgent.id, early.id, later_id.id, late.id]);
    }

    #[test]
    fn ids_order_and_come_back_as_they_went_in() {
        let (a, b) = (JobId(Uuid::from_u128(u64::MAX as u128)), JobId::new());
        assert!(Id::from(a) < Id::from(b), "{a} before {b}");
        assert_eq!(JobId::from(Id::from(b)), b);
        assert_eq!(a.cmp(&b), Id::from(a).cmp(&Id::from(b)));
    }

    #[test]
    fn a_leap_second_orders_within_its_minute() {
        let day = chrono::NaiveDate::from_ymd_opt(2016, 12, 31).unwrap();
        let at = |h, m, s, nanos| {
            let time = chrono::NaiveTime::from_hms_nano_opt(h, m, s, nanos).unwrap();
            Utc.from_utc_datetime(&day.and_time(time))
        };
        let times = [
            at(23, 59, 59, 999_999_999),
            at(23, 59, 59, 1_500_000_000),
            Utc.from_utc_datetime(&day.succ_opt().unwrap().and_hms_opt(0, 0, 0).unwrap()),
        ];
        assert!(times.windows(2).all(|pair| pair[0] < pair[1]));
        for pair in times.windows(2) {
            assert!(Moment::from(pair[0]) < Moment::from(pair[1]));
        }
    }

    #[test]
    fn moments_order_as_timestamps_across_the_epoch() {
        let epoch = Utc.timestamp_opt(0, 0).unwrap();
        let times = [
            epoch - Duration::nanoseconds(1_500_000_000),
            epoch - Duration::nanoseconds(1),
            epoch,
            epoch + Duration::nanoseconds(999_999_999),
            epoch + Duration::seconds(1),
        ];
        for pair in times.windows(2) {
            let (a, b) = (Moment::from(pair[0]), Moment::from(pair[1]));
            assert!(a < b, "{} before {}", pair[0], pair[1]);
        }
    }
}
