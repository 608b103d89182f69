//! Reading jobs: one by id, and the jobs matching a filter in id order, found by the scan
//! script walking the narrowest set of each queue that holds them all (the tag's index, the
//! dead or running jobs, or every job), a bounded number of jobs per call.

use std::collections::BTreeMap;

use futures_util::future::try_join_all;
use jobs_core::{Error, JobFilter, JobId, JobRecord, JobStatus, ListParams, ReadParams};
use redis::{Cmd, Value};

use crate::ids::id_text;
use crate::keys::status_code;
use crate::marker::Layout;
use crate::record::{micros, PayloadRead, Stored};
use crate::scripts::SCRIPTS;
use crate::RedisBackend;

/// Jobs one scan call examines at most, so that a call never blocks Redis for long.
pub(crate) const SCAN_BUDGET: usize = 2_000;

/// A job found by a scan: its id as stored, and its queue.
pub(crate) type Found = (String, String);

/// Adds `filter` to a script's arguments as filter.lua reads it: status code, name, tag,
/// created at or after, created before, finished before, each empty when not set. The status
/// and the tag are left out when the caller's set of jobs implies them.
pub(crate) fn push_filter(cmd: &mut Cmd, filter: &JobFilter, status: bool, tag: bool) {
    let time = |t: Option<jobs_core::Timestamp>| t.map_or(String::new(), |t| micros(t).to_string());
    cmd.arg(
        filter
            .status
            .filter(|_| status)
            .map_or(String::new(), |s| status_code(s).to_string()),
    )
    .arg(filter.name.as_deref().unwrap_or(""))
    .arg(filter.tag.as_deref().filter(|_| tag).unwrap_or(""))
    .arg(time(filter.created_after))
    .arg(time(filter.created_before))
    .arg(time(filter.finished_before));
}

/// What a scan walks: a set of the queue that holds every job the filter can match, and the
/// parts of the filter that the set does not imply, to be checked on each job.
struct ScanSet {
    /// The set's key, after the queue's key base.
    name: String,
    check_status: bool,
    check_tag: bool,
}

impl ScanSet {
    /// The narrowest set for `filter`.
    fn for_filter(filter: &JobFilter) -> Self {
        let (name, check_status, check_tag) = match (&filter.tag, filter.status) {
            (Some(tag), _) => (format!("tag:{tag}"), true, false),
            (None, Some(JobStatus::Dead)) => ("dead".into(), false, true),
            (None, Some(JobStatus::Running)) => ("running".into(), false, true),
            (None, _) => ("all".into(), true, true),
        };
        ScanSet {
            name,
            check_status,
            check_tag,
        }
    }
}

impl RedisBackend {
    pub(crate) async fn read_one(&self, p: ReadParams) -> Result<Option<JobRecord>, Error> {
        let id = &id_text(p.id);
        self.in_some_queue(|queue| async move {
            let found = self.read_many(&queue, std::slice::from_ref(id)).await?;
            Ok(found.into_iter().next())
        })
        .await
    }

    pub(crate) async fn list_matching(&self, p: ListParams) -> Result<Vec<JobRecord>, Error> {
        let found = self.find(&p.filter, p.after, p.limit).await?;
        let mut by_queue: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (id, queue) in &found {
            by_queue.entry(queue).or_default().push(id.clone());
        }
        let read = try_join_all(
            by_queue
                .iter()
                .map(|(queue, ids)| self.read_many(queue, ids)),
        )
        .await?;
        let mut records: Vec<JobRecord> = read
            .into_iter()
            .flatten()
            // A job may have changed between the scan and the read.
            .filter(|r| p.filter.matches(r))
            .collect();
        records.sort_unstable_by_key(|r| r.id);
        Ok(records)
    }

    /// Up to `limit` jobs matching `filter` with ids after `after`, in id order.
    pub(crate) async fn find(
        &self,
        filter: &JobFilter,
        after: Option<JobId>,
        limit: usize,
    ) -> Result<Vec<Found>, Error> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let queues = match &filter.queue {
            Some(queue) => vec![queue.clone()],
            None => self.all_queues().await?,
        };
        let after = after.map(id_text).unwrap_or_default();
        let per_queue = try_join_all(
            queues
                .iter()
                .map(|queue| self.find_in(queue, filter, &after, limit)),
        )
        .await?;
        let mut found: Vec<Found> = per_queue
            .into_iter()
            .zip(queues)
            .flat_map(|(ids, queue)| ids.into_iter().map(move |id| (id, queue.clone())))
            .collect();
        found.sort_unstable();
        found.truncate(limit);
        Ok(found)
    }

    /// Up to `limit` ids of `queue`'s jobs matching `filter` after `after`, in order: one scan
    /// call per [`SCAN_BUDGET`] jobs examined.
    async fn find_in(
        &self,
        queue: &str,
        filter: &JobFilter,
        after: &str,
        limit: usize,
    ) -> Result<Vec<String>, Error> {
        if self.layout() == Layout::Streams {
            return self.find_entries(queue, filter, after, limit).await;
        }
        let set = ScanSet::for_filter(filter);
        let mut found = Vec::new();
        let mut cursor = after.to_string();
        loop {
            let mut inv = self.timeless_invocation(&SCRIPTS.scan, queue);
            inv.arg(&set.name)
                .arg(&cursor)
                .arg(limit - found.len())
                .arg(SCAN_BUDGET);
            push_filter(&mut inv, filter, set.check_status, set.check_tag);
            let (ids, next): (Vec<String>, Option<String>) = self.run(&inv).await?;
            found.extend(ids);
            match next {
                Some(next) if found.len() < limit => cursor = next,
                _ => return Ok(found),
            }
        }
    }

    /// The records of jobs `ids` of `queue` that exist; a payload that is not JSON is shown as
    /// a JSON string of its text ([`PayloadRead::Lenient`]), so a corrupt job stays visible.
    pub(crate) async fn read_many(
        &self,
        queue: &str,
        ids: &[String],
    ) -> Result<Vec<JobRecord>, Error> {
        if self.layout() == Layout::Streams {
            return self.read_entries(queue, ids).await;
        }
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            Stored::read(&mut pipe, &self.inner().keys, queue, id);
        }
        let replies: Vec<Value> = self.query_pipe(&pipe).await?;
        let mut records = Vec::with_capacity(ids.len());
        for (id, stored) in ids.iter().zip(Stored::from_replies(replies)?) {
            // None: deleted meanwhile.
            if let Some(stored) = stored {
                records.push(stored.record(id, queue, PayloadRead::Lenient)?);
            }
        }
        Ok(records)
    }
}
