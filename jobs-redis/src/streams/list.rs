//! Finding a queue's jobs by filter, in id order. The layout keeps no index of its jobs by id,
//! so a page walks the queue's whole id map (scan.lua, a step of about [`SCAN_BUDGET`] jobs per
//! call) and keeps the first ids after the cursor: a page costs about a call per 2,000 jobs the
//! queue holds, where the hash layout reads its index of all jobs from the cursor. Dead jobs
//! are walked in the dead set, from the cursor, as the hash layout walks them.

use std::collections::BTreeSet;

use jobs_core::{Error, JobFilter, JobStatus};

use crate::read::{push_filter, SCAN_BUDGET};
use crate::scripts::SCRIPTS;
use crate::RedisBackend;

impl RedisBackend {
    /// Up to `limit` ids of `queue`'s jobs matching `filter` after `after` ('' for none), in
    /// order.
    pub(crate) async fn find_entries(
        &self,
        queue: &str,
        filter: &JobFilter,
        after: &str,
        limit: usize,
    ) -> Result<Vec<String>, Error> {
        // The dead set is walked in id order, from `after`; the id map in no order, from the
        // start of its `HSCAN`.
        let (walk, mut cursor) = match filter.status {
            Some(JobStatus::Dead) => ("dead", after.to_string()),
            _ => ("ids", "0".to_string()),
        };
        let mut kept: BTreeSet<String> = BTreeSet::new();
        loop {
            // Once `limit` ids are kept, only ids before the greatest of them can enter.
            let before = match kept.last() {
                Some(last) if kept.len() >= limit => last.as_str(),
                _ => "",
            };
            let mut inv = self.timeless_invocation(&SCRIPTS.xscan, queue);
            inv.arg(walk)
                .arg(&cursor)
                .arg(after)
                .arg(before)
                .arg(SCAN_BUDGET)
                .arg(limit - kept.len().min(limit));
            push_filter(&mut inv, filter, true, true);
            let (found, next): (Vec<String>, String) = self.run(&inv).await?;
            kept.extend(found);
            while kept.len() > limit {
                kept.pop_last();
            }
            if next.is_empty() {
                return Ok(kept.into_iter().collect());
            }
            cursor = next;
        }
    }
}
