//! Holding off a fetch under concurrency limits that the worker's own jobs nearly fill: such a
//! fetch could lease only a job or two, and as the worker's jobs end the room grows, so it waits
//! a moment for more to end (or, when its jobs fill the limits, for one to end) and fetches
//! them in one batch, rather than one small fetch per job.

use std::collections::HashMap;
use std::time::Duration;

use crate::flow::QueueFlow;

use super::queue_state::{FLOW_RETRY, FLOW_RETRY_MAX};

/// How long to wait before fetching from `open` under `flow`, the worker holding `counted`
/// jobs per queue that still count against limits; `None`: fetch now. Only a fetch whose every
/// queue has a concurrency limit waits: another queue's room is unknown here. It waits
/// [`FLOW_RETRY_MAX`] while its jobs fill the limits (a fetch could lease nothing), and
/// [`FLOW_RETRY`] while the room is under `batch` or half the limits, whichever is smaller.
pub(super) fn hold_off(
    flow: &[QueueFlow],
    open: &[String],
    counted: &HashMap<String, usize>,
    batch: usize,
) -> Option<Duration> {
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
    if room == 0 {
        Some(FLOW_RETRY_MAX)
    } else if room < batch.min(limit / 2).max(1) {
        Some(FLOW_RETRY)
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
            hold_off(&flow, &a, &held(&[("a", 9)]), 8),
            Some(FLOW_RETRY),
            "room for fewer than a batch"
        );
        assert_eq!(
            hold_off(&flow, &a, &held(&[("a", 16)]), 8),
            Some(FLOW_RETRY_MAX),
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
            Some(FLOW_RETRY)
        );
        let unlimited = ["a".to_string(), "c".to_string()];
        assert_eq!(
            hold_off(&flow, &unlimited, &held(&[("a", 16)]), 8),
            None,
            "another queue's room is unknown"
        );
    }
}
