//! A job as the layout's enqueue scripts take it (`lua/streams/enqueue.lua` and `cron.lua`: one
//! `XADD` per job, one `HSET` of the id map and one count per call), and what the layout does
//! not store yet. The calls are the hash layout's ([`enqueue`](crate::enqueue)): a batch per
//! queue in chunks, a bounded queue's jobs in one call.

use jobs_core::{first_version, Coalesce, Error, JobStatus, NewJob, Timestamp, DEFAULT_PRIORITY};

use crate::flow::encode_key_limits;
use crate::ids::id_text;
use crate::record::{encode_meta, encode_tags, micros};
use crate::streams::{not_built, packed};

/// Refuses what the layout does not store yet: a workflow step.
pub(crate) fn refuse_unbuilt(job: &NewJob) -> Result<(), Error> {
    match job.step {
        Some(_) => Err(not_built("workflow steps")),
        None => Ok(()),
    }
}

/// Appends job `job` as enqueue.lua reads it: its shape, its `j` (see
/// [`packed`](crate::streams::packed)), then its entry's other fields (record.rs's names),
/// created now. The shape is empty for a job due now, of the default priority and with no other
/// field (most jobs), else `<run_at>|<priority>|<n>|<u><k>|<coalesce>`: its run_at when it is
/// not due yet (else nothing), its priority when it is not the default (else nothing), the
/// number of values that follow `j`, `u` when the first two of them are its unique key's (else
/// nothing), `k` when it has key limits (else nothing), and how it coalesces with an earlier
/// job of its key: `t` (throttle) or `d` (debounce), the window in microseconds, `:` and the
/// key (else nothing).
pub(crate) fn push_entry(inv: &mut redis::Cmd, job: &NewJob, now: Timestamp) {
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
        + usize::from(!job.tags.is_empty())
        + usize::from(job.key_limits.is_some());
    let later = match job.initial_status(now) {
        JobStatus::Scheduled => micros(job.run_at).to_string(),
        _ => String::new(),
    };
    let shape = if later.is_empty() && pairs == 0 && job.coalesce.is_none() {
        String::new()
    } else {
        let priority = priority.map_or(String::new(), |p| p.to_string());
        let unique = if job.unique_key.is_some() { "u" } else { "" };
        let limited = if job.key_limits.is_some() { "k" } else { "" };
        let coalesce = job.coalesce.as_ref().map_or(String::new(), |c| {
            let mode = match c {
                Coalesce::Throttle { .. } => 't',
                Coalesce::Debounce { .. } => 'd',
            };
            format!("{mode}{}:{}", c.window().as_micros(), c.key())
        });
        format!(
            "{later}|{priority}|{}|{unique}{limited}|{coalesce}",
            2 * pairs
        )
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
    if let Some(limits) = &job.key_limits {
        inv.arg("k").arg(encode_key_limits(limits));
    }
}
