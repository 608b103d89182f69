//! Storing jobs as stream entries: each queue's jobs in calls of up to [`CHUNK`], one `XADD`
//! per job, one `HSET` of the id map and one count per call; and the jobs of cron ticks.

use std::collections::{BTreeMap, HashMap};

use futures_util::future::{try_join, try_join_all};
use jobs_core::{
    first_version, Coalesce, CronTickParams, EnqueueParams, Enqueued, Error, JobId, JobStatus,
    NewJob, Timestamp, DEFAULT_PRIORITY,
};

use crate::ids::id_text;
use crate::record::{encode_meta, encode_tags, micros, parse_id};
use crate::scripts::SCRIPTS;
use crate::streams::{not_built, packed};
use crate::RedisBackend;

/// Jobs stored per script call, so a huge batch never blocks Redis for long.
const CHUNK: usize = 500;

/// Refuses what the layout does not store yet: key limits, a workflow step.
fn check(job: &NewJob) -> Result<(), Error> {
    let unbuilt = if job.step.is_some() {
        Some("workflow steps")
    } else if job.key_limits.is_some() {
        Some("key limits")
    } else {
        None
    };
    unbuilt.map_or(Ok(()), |what| Err(not_built(what)))
}

/// Appends job `job` as enqueue.lua reads it: its shape, its `j` (see
/// [`packed`](crate::streams::packed)), then its entry's other fields (record.rs's names),
/// created now. The shape is empty for a job due now, of the default priority and with no other
/// field (most jobs), else `<run_at>|<priority>|<n>|<u>|<coalesce>`: its run_at when it is not
/// due yet (else nothing), its priority when it is not the default (else nothing), the number
/// of values that follow `j`, `u` when the first two of them are its unique key's (else
/// nothing), and how it coalesces with an earlier job of its key: `t` (throttle) or `d`
/// (debounce), the window in microseconds, `:` and the key (else nothing).
fn push_entry(inv: &mut redis::Cmd, job: &NewJob, now: Timestamp) {
    let versioned = job.version != first_version();
    // The default priority is left out, and so is created_at when it is run_at (a job due when
    // it is enqueued).
    let created = (job.run_at != now).then(|| micros(now));
    let priority = (job.priority != DEFAULT_PRIORITY).then_some(job.priority);
    let pairs = usize::from(job.unique_key.is_some())
        + usize::from(created.is_some())
        + usize::from(priority.is_some())
        + usize::from(versioned)
        + usize::from(job.trace_context.is_some())
        + usize::from(!job.tags.is_empty());
    let later = match job.initial_status(now) {
        JobStatus::Scheduled => micros(job.run_at).to_string(),
        _ => String::new(),
    };
    let shape = if later.is_empty() && pairs == 0 && job.coalesce.is_none() {
        String::new()
    } else {
        let priority = priority.map_or(String::new(), |p| p.to_string());
        let keyed = if job.unique_key.is_some() { "u" } else { "" };
        let coalesce = job.coalesce.as_ref().map_or(String::new(), |c| {
            let mode = match c {
                Coalesce::Throttle { .. } => 't',
                Coalesce::Debounce { .. } => 'd',
            };
            format!("{mode}{}:{}", c.window().as_micros(), c.key())
        });
        format!("{later}|{priority}|{}|{keyed}|{coalesce}", 2 * pairs)
    };
    let j = packed::pack(
        &id_text(job.id),
        micros(job.run_at),
        &encode_meta(job),
        job.payload.get(),
    );
    inv.arg(shape).arg(j);
    if let Some(key) = &job.unique_key {
        inv.arg("u").arg(key);
    }
    if let Some(created) = created {
        inv.arg("c").arg(created);
    }
    if let Some(priority) = priority {
        inv.arg("pr").arg(priority);
    }
    if versioned {
        inv.arg("v").arg(job.version);
    }
    if let Some(trace) = &job.trace_context {
        inv.arg("tc").arg(trace);
    }
    if !job.tags.is_empty() {
        inv.arg("tg").arg(encode_tags(&job.tags));
    }
}

impl RedisBackend {
    /// Stores the job of a cron tick (see
    /// [`Backend::enqueue_cron`](jobs_core::Backend::enqueue_cron)), unless this tick or a later
    /// one of its schedule already was.
    pub(crate) async fn enqueue_tick_entry(
        &self,
        p: CronTickParams,
    ) -> Result<Option<JobId>, Error> {
        let job: &NewJob = &p.job;
        check(job)?;
        let mut inv = self.invocation(&SCRIPTS.xcron, &job.queue, p.now);
        inv.arg(&p.schedule).arg(micros(p.tick));
        push_entry(&mut inv, job, p.now);
        let (_, stored) = try_join(
            self.register(&[job.queue.as_str()]),
            self.run::<String>(&inv),
        )
        .await?;
        (!stored.is_empty()).then(|| parse_id(&stored)).transpose()
    }

    pub(crate) async fn enqueue_entries(&self, p: EnqueueParams) -> Result<Vec<Enqueued>, Error> {
        for job in &p.jobs {
            check(job)?;
        }
        let mut by_queue: BTreeMap<&str, Vec<&NewJob>> = BTreeMap::new();
        for job in &p.jobs {
            by_queue.entry(&job.queue).or_default().push(job);
        }
        let queues: Vec<&str> = by_queue.keys().copied().collect();
        let calls = by_queue.iter().flat_map(|(queue, jobs)| {
            jobs.chunks(CHUNK).map(|chunk| {
                let mut inv = self.invocation(&SCRIPTS.xenqueue, queue, p.now);
                for job in chunk {
                    push_entry(&mut inv, job, p.now);
                }
                async move { self.run::<Vec<(String, String)>>(&inv).await }
            })
        });
        let (_, answers) = try_join(self.register(&queues), try_join_all(calls)).await?;
        // The jobs not stored, each with the job that answers for it: the active holder of its
        // unique key, or its coalesce key's job.
        let held: HashMap<String, String> = answers.into_iter().flatten().collect();
        let holder = |id| (!held.is_empty()).then(|| held.get(&id_text(id))).flatten();
        p.jobs
            .iter()
            .map(|j| match holder(j.id) {
                Some(holder) => Ok(Enqueued {
                    id: parse_id(holder)?,
                    duplicate: true,
                }),
                None => Ok(Enqueued {
                    id: j.id,
                    duplicate: false,
                }),
            })
            .collect()
    }
}
