//! The layout on Redis Streams, which a backend uses when its URL says `layout=streams`:
//! the proposal of `docs/redis-streams.md`, being built in the slices it lists. It is for
//! trying out and measuring, not yet for production: a store laid out so is named `streams`
//! (see [`marker`](crate::marker)), so no backend of the hash layout ever reads it.
//!
//! Per queue, under the queue's hash tag (the Lua names are in `lua/streams/keys.lua`):
//!
//! - the stream `x` holds an entry per job made ready, with its record's fields as of then
//!   (its id, run_at, `m` and payload packed into the first, see [`packed`]); its consumer
//!   group `g` has a consumer per worker, and the group's pending entries are the
//!   running jobs. A job made pending again at a run_at already past (released, rescued) is
//!   an entry of `xr`, which fetches read first, so that it keeps its place. A priority other
//!   than the default has its own two, `x:<p>` and `xr:<p>`, and fetches read the priorities
//!   in order;
//! - the hash `ids` maps each job to its current entry, the hash `res` each ended job to how
//!   it ended (the mark of its completing lease and its result, or dead), `progress` each job
//!   to its progress;
//! - a job waiting for a later run_at (scheduled, or a retry's backoff) is the hash `d:<id>`
//!   and a member of the sorted set `xdelayed`, added to the stream by the fetch that finds it
//!   due; a job cancelled before it ran keeps its fields in `d:<id>` too;
//! - each fetch call reads one stream (the first, in order of priority, that holds entries);
//!   its lease is the hash `lease:<call>` (worker, start, expiry, the stream, its first and
//!   last entry there, and each renewed entry's expiry) and a member of the sorted set
//!   `leases`, written once per call, not per job;
//! - a due job that waits apart from the streams (one with key limits, or one a worker read but
//!   does not run: another name, a newer version) is the hash `d:<id>` (pending) and a member
//!   of the sorted set `xapart`, in order of priority, run_at and id; a fetch takes those it may
//!   start as entries of the stream `xa`, leased at once, in their merged order with the
//!   streams' entries (a call takes a run of one or the other);
//! - the counts per status, the finished jobs' `done` set, the dead set, each job's errors, the
//!   queue's limits and starts, and each key's running jobs and starts are the hash layout's.
//!
//! A job costs its enqueue one `XADD` and a field of the id map; a fetch call one
//! `XREADGROUP`, an `HSET` and a `ZADD`; a completion call one `HMGET` and one `XPENDING` for
//! the fence (see [`token`]), one `XACK`, one `HSET` of the results, one `ZADD` to `done` and a
//! check per fetch call it draws on, which drops a call none of whose entries is pending.
//!
//! Built so far (the first slice of the proposal, priorities, the second slice's lists and
//! management, and the third slice's pickup): enqueue, with delays and priorities (a stream per
//! priority in use, read in order of priority); fetch, and an idle worker's pickup of the next job
//! in a blocked read of `x` ([`pickup`]); complete, fail with retries and the dead-letter set,
//! release, renew and progress under the lease; rescue of lapsed leases and of gone workers; read
//! by id; lists by filter ([`list`]: the id map walked, the dead set for dead jobs) and retry,
//! cancel and delete, by id or by filter; pause, the counts and retention (prune, which deletes a
//! completed or cancelled job's entry with its id, result, progress and errors, and the count of
//! jobs finished since a time). A job cancelled before it ran keeps its fields in `d:<id>` (its
//! entry is deleted, so that no read delivers it); one cancelled while it ran keeps its entry,
//! acknowledged, so that its worker's lease no longer holds. Unique keys, throttle and debounce
//! (into a job while it waits in `xdelayed`) and cron ticks are kept as the hash layout keeps
//! them; the stored versions are counted over the delayed jobs and each stream's undelivered and
//! pending entries. Queue limits: a max depth (the enqueue calls are the hash layout's, see
//! [`enqueue`]), a concurrency and a rate (a fetch takes what they let start; a blocked read is
//! not started on such a queue; a fetch reserves leases beyond a concurrency as the hash
//! layout's does, entries of the sorted set `reserved` until they leave running), and key
//! limits. A worker sets aside the jobs it read but does not run (see [`fetch`]); they wait
//! apart, untouched, for one that runs them. A job that needs what is not built (a workflow
//! step) is refused with [`Error::Invalid`] naming it. A stream hands out its entries in the
//! order they were added: among jobs of one priority that were due when enqueued, one with an earlier run_at does
//! not go first; a fetch across queues takes from each in turn. A dead job's entry stays until it
//! is retried or deleted.

pub(crate) mod enqueue;
mod fetch;
mod list;
pub(crate) mod packed;
mod pickup;
mod read;
pub(crate) mod readers;
mod reply;
pub(crate) mod token;

use jobs_core::Error;

/// The error of an operation or a job the streams layout does not handle yet.
pub(crate) fn not_built(what: &str) -> Error {
    Error::Invalid(format!(
        "{what} is not built yet in the Redis layout `streams` (URL option `layout=streams`); \
         use the default layout, `hash`"
    ))
}

#[cfg(test)]
mod tests {
    /// The scripts know which priority's jobs go to the streams without a priority in their
    /// name.
    #[test]
    fn the_scripts_default_priority_is_jobs_cores() {
        let keys = include_str!("../lua/streams/keys.lua");
        let line = format!("local DEFAULT_PRIORITY = {}\n", jobs_core::DEFAULT_PRIORITY);
        assert!(keys.contains(&line), "keys.lua: {line}");
    }
}
