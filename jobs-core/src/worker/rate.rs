//! When a rate lets this worker start jobs again: a start leaves its queue's sliding window one
//! period after it was made, so after a fetch that a rate held back, the worker fetches again
//! as the oldest of its own starts still in a window leaves it, rather than at its next poll.
//! Polling alone (up to [`FLOW_RETRY_MAX`](super::queue_state::FLOW_RETRY_MAX) apart) started a
//! backlog's jobs up to that much late each period: in bursts, at about limit / (period + the
//! delay). A start that leaves its window while a fetch is on its way is one that fetch could
//! not see (the store counts at the fetch's time): the worker fetches again at once, rather than
//! at its next poll, which here left a window unused for up to 270 ms in a third of the runs on
//! PostgreSQL. The starts of other processes leave their windows too; those processes wake for
//! their own, and this one still polls.
//!
//! A busy queue never leaves its fetches empty, so what the worker keeps is bounded by time, not
//! by its next empty fetch: the starts that left their windows are dropped as starts are
//! recorded, and those within 1/[`GRAIN`] of a period of each other share one entry, the later
//! (a wake-up at most that much late).

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use crate::clock::Timestamp;
use crate::flow::QueueFlow;

/// The fraction of a period within which recorded starts share an entry: at most about this
/// many entries per rated queue.
const GRAIN: u32 = 64;

/// When this worker's recent starts under queue rates leave their windows.
#[derive(Default)]
pub(super) struct RatedStarts {
    /// Per rated queue, when its recorded starts leave the window, oldest first: each entry
    /// the first and the last time of those it stands for, which open at the last.
    opening: HashMap<String, VecDeque<(Timestamp, Timestamp)>>,
}

impl RatedStarts {
    /// Notes the jobs a fetch at `now` leased from `queues` (one entry per job), each counting
    /// against its queue's rate in `flow`, if it has one.
    pub(super) fn record<'q>(
        &mut self,
        now: Timestamp,
        flow: &[QueueFlow],
        queues: impl IntoIterator<Item = &'q str>,
    ) {
        let mut noted: Vec<&str> = Vec::new();
        for queue in queues {
            if noted.contains(&queue) {
                continue;
            }
            noted.push(queue);
            let rate = flow
                .iter()
                .find(|f| f.queue == queue)
                .and_then(|f| f.limits.rate);
            let Some(rate) = rate else { continue };
            let opening = self.opening.entry(queue.to_string()).or_default();
            forget_open(opening, now);
            let at = crate::clock::later(now, rate.period);
            let grain = rate.period / GRAIN;
            match opening.back_mut() {
                Some((first, last)) if (at - *first).to_std().is_ok_and(|gap| gap < grain) => {
                    *last = at.max(*last);
                }
                _ => opening.push_back((at, at)),
            }
        }
    }

    /// How long from `now` until the oldest of the recorded starts that were still in their
    /// window at `fetched` (the time of a fetch that a rate held back) leaves it: zero when it
    /// left while that fetch was on its way, which the fetch could not see. Forgets those that
    /// had left by `fetched`: that fetch saw them gone and still found no room.
    pub(super) fn opens_in(&mut self, fetched: Timestamp, now: Timestamp) -> Option<Duration> {
        self.opening.retain(|_, opening| {
            forget_open(opening, fetched);
            !opening.is_empty()
        });
        let first = self
            .opening
            .values()
            .filter_map(|opening| opening.front().map(|(_, last)| *last))
            .min()?;
        Some((first - now).to_std().unwrap_or_default())
    }
}

/// Drops the entries of `opening` (oldest first) that are open by `now`.
fn forget_open(opening: &mut VecDeque<(Timestamp, Timestamp)>, now: Timestamp) {
    while opening.front().is_some_and(|(_, last)| *last <= now) {
        opening.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::{QueueLimits, Rate};
    use chrono::TimeZone;

    fn at(ms: i64) -> Timestamp {
        chrono::Utc
            .timestamp_millis_opt(1_700_000_000_000 + ms)
            .unwrap()
    }

    fn flow() -> Vec<QueueFlow> {
        let rated = |queue: &str, ms| QueueFlow {
            queue: queue.into(),
            limits: QueueLimits::default().rate(Rate::new(10, Duration::from_millis(ms))),
            keyed: false,
        };
        let capped = QueueFlow {
            queue: "capped".into(),
            limits: QueueLimits::default().concurrency(2),
            keyed: false,
        };
        vec![rated("second", 1_000), rated("tenth", 100), capped]
    }

    #[test]
    fn the_oldest_start_in_a_window_says_when_it_opens() {
        let mut starts = RatedStarts::default();
        assert_eq!(starts.opens_in(at(0), at(0)), None, "nothing started");
        starts.record(at(0), &flow(), ["second", "second", "capped"]);
        starts.record(at(50), &flow(), ["tenth"]);
        starts.record(at(60), &flow(), ["plain"]);
        assert_eq!(
            starts.opens_in(at(100), at(100)),
            Some(Duration::from_millis(50)),
            "the shorter period's start leaves first"
        );
        assert_eq!(
            starts.opens_in(at(150), at(150)),
            Some(Duration::from_millis(850)),
            "then the start of 0 in the window of a second"
        );
        assert_eq!(starts.opens_in(at(1_000), at(1_000)), None, "all have left");
    }

    #[test]
    fn a_window_that_opens_while_the_fetch_is_out_is_fetched_at_once() {
        let mut starts = RatedStarts::default();
        starts.record(at(0), &flow(), ["second"]);
        assert_eq!(
            starts.opens_in(at(995), at(1_012)),
            Some(Duration::ZERO),
            "a fetch sent at 995 ms, back at 1,012, could not see the start of 0 leave at 1,000"
        );
        assert_eq!(
            starts.opens_in(at(1_000), at(1_015)),
            None,
            "a fetch sent at 1,000 saw it leave, and still found no room: other starts hold it"
        );
    }

    #[test]
    fn a_queue_that_never_idles_keeps_a_bounded_log() {
        let mut starts = RatedStarts::default();
        for ms in 0..10_000 {
            starts.record(at(ms), &flow(), ["second"]);
        }
        let kept = starts.opening["second"].len();
        assert!(
            (60..=70).contains(&kept),
            "a second's starts in about 64 entries, the older ones dropped: {kept}"
        );
        assert_eq!(
            starts.opens_in(at(10_000), at(10_000)),
            Some(Duration::from_millis(7)),
            "an entry stands for 16 starts a ms apart (under 1/64 s): that of 8,992 to 9,007 ms \
             opens as the last of them leaves"
        );
    }
}
