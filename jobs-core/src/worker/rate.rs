//! When a rate lets this worker start jobs again: a start leaves its queue's sliding window one
//! period after it was made, so after a fetch that a rate held back, the worker fetches again
//! as the oldest of its own starts still in a window leaves it, rather than at its next poll.
//! Polling alone (up to [`FLOW_RETRY_MAX`](super::queue_state::FLOW_RETRY_MAX) apart) started a
//! backlog's jobs up to that much late each period: in bursts, at about limit / (period + the
//! delay). The starts of other processes leave their windows too; those processes wake for
//! their own, and this one still polls.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use crate::clock::Timestamp;
use crate::flow::QueueFlow;

/// When this worker's recent starts under queue rates leave their windows.
#[derive(Default)]
pub(super) struct RatedStarts {
    opening: BinaryHeap<Reverse<Timestamp>>,
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
            if let Some(rate) = rate {
                self.opening
                    .push(Reverse(crate::clock::later(now, rate.period)));
            }
        }
    }

    /// How long from `now` until the oldest of the recorded starts leaves its window, if one is
    /// still in it; forgets those that have left.
    pub(super) fn opens_in(&mut self, now: Timestamp) -> Option<Duration> {
        while let Some(Reverse(at)) = self.opening.peek() {
            if *at > now {
                return (*at - now).to_std().ok();
            }
            self.opening.pop();
        }
        None
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
        assert_eq!(starts.opens_in(at(0)), None, "nothing started");
        starts.record(at(0), &flow(), ["second", "second", "capped"]);
        starts.record(at(50), &flow(), ["tenth"]);
        starts.record(at(60), &flow(), ["plain"]);
        assert_eq!(
            starts.opens_in(at(100)),
            Some(Duration::from_millis(50)),
            "the shorter period's start leaves first"
        );
        assert_eq!(
            starts.opens_in(at(150)),
            Some(Duration::from_millis(850)),
            "then the start of 0 in the window of a second"
        );
        assert_eq!(starts.opens_in(at(1_000)), None, "all have left");
    }
}
