//! Holding off a fetch under concurrency limits that the worker's own jobs nearly fill: such a
//! fetch could lease only a job or two, and as the worker's jobs end the room grows, so it waits
//! a moment for more to end (or, when its jobs fill the limits, for one to end) and fetches
//! them in one batch, rather than one small fetch per job. It is woken once, when enough have
//! ended, not at each job's end.

use std::collections::HashMap;
use std::time::Duration;

use crate::flow::QueueFlow;

use super::queue_state::{FLOW_RETRY, FLOW_RETRY_MAX};

/// A fetch held off: it waits up to `at_most` for the worker's own jobs to free `places` more
/// places under the limits, then fetches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct HoldOff {
    /// How many more of the worker's jobs to wait for.
    pub(super) places: usize,
    /// The longest wait.
    pub(super) at_most: Duration,
}

/// Whether to wait before fetching from `open` under `flow`, the worker holding `counted` jobs
/// per queue that still count against limits; `None`: fetch now. Only a fetch whose every
/// queue has a concurrency limit waits: another queue's room is unknown here. While its jobs
/// fill the limits (a fetch could lease nothing) it waits up to [`FLOW_RETRY_MAX`] for one of
/// them to end; while the room is under `batch` or half the limits, whichever is smaller, up to
/// [`FLOW_RETRY`] for the room to reach it.
pub(super) fn hold_off(
    flow: &[QueueFlow],
    open: &[String],
    counted: &HashMap<String, usize>,
    batch: usize,
) -> Option<HoldOff> {
    let mut room = 0;
    let mut limit = 0;
    for queue in open {
        let concurrency = flow
            .iter()
            .find(|f| &f.queue == queue)
            .and_then(|f| f.limits.concurrency)?;
        let concurrency = concurrency as usize;
        let held = counted.get(queue).copied().unwrap_or(0);
        room += concurrency.saturating_sub(held);
        limit += concurrency;
    }
    let enough = batch.min(limit / 2).max(1);
    if room == 0 {
        Some(HoldOff {
            places: 1,
            at_most: FLOW_RETRY_MAX,
        })
    } else if room < enough {
        Some(HoldOff {
            places: enough - room,
            at_most: FLOW_RETRY,
        })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::QueueLimits;

    fn capped(queue: &str, n: u32) -> QueueFlow {
        QueueFlow {
            queue: queue.into(),
            limits: QueueLimits::default().concurrency(n),
            keyed: false,
        }
    }

    fn held(pairs: &[(&str, usize)]) -> HashMap<String, usize> {
        pairs.iter().map(|(q, n)| (q.to_string(), *n)).collect()
    }

    #[test]
    fn waits_only_while_its_own_jobs_nearly_fill_every_limit() {
        let flow = [capped("a", 16), capped("b", 1)];
        let a = ["a".to_string()];
        assert_eq!(hold_off(&flow, &a, &held(&[]), 8), None, "room for a batch");
        assert_eq!(hold_off(&flow, &a, &held(&[("a", 8)]), 8), None);
        assert_eq!(
            hold_off(&flow, &a, &held(&[("a", 10)]), 8),
            Some(HoldOff {
                places: 2,
                at_most: FLOW_RETRY
            }),
            "room for fewer than a batch: waits for the rest of one"
        );
        assert_eq!(
            hold_off(&flow, &a, &held(&[("a", 16)]), 8),
            Some(HoldOff {
                places: 1,
                at_most: FLOW_RETRY_MAX
            }),
            "its own jobs fill the limit"
        );
        let b = ["b".to_string()];
        assert_eq!(
            hold_off(&flow, &b, &held(&[]), 8),
            None,
            "a limit of one fetches its one job at once"
        );
        let both = ["a".to_string(), "b".to_string()];
        assert_eq!(
            hold_off(&flow, &both, &held(&[("a", 16)]), 8),
            Some(HoldOff {
                places: 7,
                at_most: FLOW_RETRY
            }),
            "one place left of 17, a batch of 8"
        );
        let unlimited = ["a".to_string(), "c".to_string()];
        assert_eq!(
            hold_off(&flow, &unlimited, &held(&[("a", 16)]), 8),
            None,
            "another queue's room is unknown"
        );
    }
}
