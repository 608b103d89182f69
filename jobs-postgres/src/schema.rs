//! The schema the backend keeps its tables in, and why the tables look the way they do.
//!
//! # Design
//!
//! Everything lives in one schema per backend (default `jobs`; the tests give each backend its
//! own):
//!
//! - `jobs`: one row per job, the whole job model as columns. The status is `text` with a
//!   `CHECK` (readable in `psql`, no enum to migrate when a status is added). Payloads and
//!   results are `json`, kept as the text the client sent, so the hot path never re-encodes
//!   them; the errors of failed attempts are a `jsonb` array of objects (`attempt`, `at`,
//!   `kind`, `message`, `chain`) that a failure appends to in place (objects stored before
//!   kinds were kept have none, and read back as retryable). The lease is three columns:
//!   worker, token (a fresh `uuid` per fetch) and expiry, all set while the job runs; a
//!   completed job keeps the token alone (the one it was completed under, so that a repeated
//!   completion is recognised) and reads back without a lease. Tags are a `text[]`. `version`
//!   (migration 0008, `integer`, 1 for the jobs stored before it) is the payload's version,
//!   written by every enqueue (and, with the payload, by a debounced enqueue folding into a
//!   waiting job). Workflow steps (migration 0009): `step` (`jsonb`, the job's
//!   [`Step`](jobs_core::workflow::Step), NULL for an ordinary job) and `inputs` (`jsonb`, the
//!   values delivered to its slots, an object keyed by the slot's number as text, each value
//!   a JSON string holding the delivered value's text as it was written, NULL until the first
//!   delivery); a step with inputs to come is `waiting`, in no index a fetch reads.
//!   The statements that end jobs (complete, fail, rescue) apply the ended steps' effects in
//!   the same transaction, through the schema's `apply_step_effects` (migration 0021), called
//!   only for a batch that ended steps with effects: deliveries, gathered per target so that
//!   each target is written once (the earliest delivery to a slot wins, a filled slot keeps
//!   its value), make a waiting step pending once its slots are filled (waking its queue);
//!   cancels reach waiting, scheduled and pending targets and are counted as every cancel is.
//!   The targets are looked up by primary key and locked in id order, so that two statements
//!   delivering to the same targets wait for one another rather than deadlock; a delivered
//!   result is kept as the text it was written in (a JSON string in `inputs`), never cast to
//!   `jsonb`, which would rewrite its numbers.
//! - `cron_ticks`: the last tick enqueued per schedule; claiming a tick is an upsert whose
//!   `WHERE tick < EXCLUDED.tick` lets exactly one of many workers through.
//! - `workers`: one row per live worker process, upserted by its heartbeats; rows whose
//!   heartbeat expired are removed by the next heartbeat of any worker.
//! - `schedules`: the cron schedules the workers run, by name, with when they were last seen.
//! - `liveness`: the workers that hold their liveness lock (a session advisory lock keyed by
//!   `hashtext` of the schema and of the worker's id); a listed worker whose lock a transaction
//!   can take is gone. A gone worker's row goes once its jobs are rescued.
//! - `queues`: the queues that jobs were deleted from, so that a queue emptied by deletes or
//!   retention is still named; queues that hold jobs are found in `jobs` through its indexes
//!   (a skip scan, one probe per queue), so enqueueing writes nothing here.
//! - `finished_counts`: each queue's completed and cancelled jobs (the statuses that grow with
//!   retention) as delta rows `(queue, status, n)`, a count being the sum of its rows, so that
//!   counting a queue reads none of its finished rows. Each statement that makes jobs completed
//!   or cancelled, or takes them out of those statuses (complete, cancel, retry, delete,
//!   prune), appends one row per queue and status it changed, in the same statement, so
//!   concurrent writers never wait on each other and the statements that cannot change these
//!   statuses write nothing here; prune, which the worker runs for each of its queues on its
//!   prune timer (with or without retention), folds the queue's rows into one per status. A
//!   TRUNCATE of `jobs` empties it (a trigger on TRUNCATE only). The other statuses are counted
//!   in `jobs`, through their partial indexes. Workers of a release before migration 0005 add
//!   no rows: upgrade with them stopped, or repair with
//!   [`PgBackend::recount`](crate::PgBackend::recount) afterwards.
//! - `finished_minutes` (migration 0007): the same jobs by queue and minute finished
//!   (`date_bin('1 minute', finished_at, 'epoch')`), delta rows `(queue, minute, n)` written by
//!   the same statements in the same way, so that a queue's throughput since a time
//!   ([`finished_since`](jobs_core::Backend::finished_since)) is the rows of `jobs` up to the
//!   next minute boundary plus the buckets from there on. Prune folds the rows of each minute
//!   into one and drops the minutes more than 25 hours before its `now`, recording the first
//!   minute kept in `finished_horizons (queue, minute)`; a count reaching back before it counts
//!   the rows of `jobs`. The TRUNCATE trigger of 0007 empties both, and
//!   [`PgBackend::recount`](crate::PgBackend::recount) rebuilds the buckets with the counts.
//! - `job_types` (migration 0008): the catalog, one row per published `(name, version)` with
//!   the whole [`JobTypeInfo`](jobs_core::JobTypeInfo) as `jsonb` (`info`) and when it was last
//!   published (`published_at`); workers upsert their types when they start. The versions of
//!   the waiting and running jobs of some names
//!   ([`stored_versions`](jobs_core::Backend::stored_versions)) are counted from `jobs`
//!   through `jobs_ready` and `jobs_leased`, not from a table of their own.
//! - Flow control (migration 0006): `queue_flow`, one row per queue with limits
//!   (`concurrency`, `rate_limit` and `rate_period_ms`, `max_depth`) or into which jobs with
//!   key limits were enqueued (`keyed`); `flow_starts`, the sliding logs of starts, one row
//!   `(queue, key, at, until, n)` per limited fetch batch and rated scope (`key` NULL for the
//!   queue), removed by the queue's next limited fetch once out of the window; `flow_started`,
//!   each rated queue's running total of its own log rows (so a fetch reads one row, not the
//!   window); `coalesce_keys`,
//!   the throttle and debounce keys `(queue, mode, key)` with the job holding each (and a
//!   throttle window's end); `flow_places` (migration 0018), the places under a queue's
//!   concurrency that each worker's promoted jobs hold (`queue, worker, places`), which every
//!   running count adds. In `jobs`, `key_limits` (`jsonb`, the job's own key limits) and
//!   `flow_counted`, set by every fetch that counts a concurrency, a queue's or a key's (and,
//!   for the running jobs, by setting a concurrency): `jobs_flow_running (queue, key_limits->>'key')` over the counted
//!   leased rows is what a limited fetch counts. The plain fetch takes no job with key limits
//!   and writes nothing new; a fetch of queues with limits or keyed jobs is one statement
//!   calling the schema's `fetch_limited` function, which locks them, then counts and leases
//!   (see `limited.rs`; migration 0008 replaced it with one taking the versions, as the plain
//!   fetch does, and 0010 with one that leaves the worker's ended leases out of its counts),
//!   or, when none of them holds keyed jobs, `fetch_unkeyed` (migration 0011), which counts,
//!   leases and logs in one statement after the lock. Enqueues into a bounded queue, and of
//!   jobs that throttle, debounce or carry key limits, take a guarded transaction (see `guarded.rs`); the plain
//!   enqueue statements store nothing into a bounded queue (a probe of `queue_flow`).
//!
//! Indexes are partial, so each covers only the rows its operation looks at and fetching stays
//! flat however many finished rows are retained:
//!
//! | index | rows | serves |
//! | --- | --- | --- |
//! | `jobs_ready (queue, priority, run_at, id)` | pending, scheduled | fetch, in run order |
//! | `jobs_leased (lease_expires_at)` | running | rescue of lapsed leases |
//! | `jobs_unique_key (queue, unique_key)` UNIQUE | active, with a key | unique jobs |
//! | `jobs_finished (queue, finished_at, id)` | completed, cancelled | retention pruning |
//! | `jobs_dead (queue, id)` | dead | listing the dead-letter set |
//! | `jobs_waiting (queue, id)` | waiting (workflow steps) | counts, queue names |
//! | `jobs_tags` GIN `(tags)` | with tags | listing and bulk operations by tag |
//! | `jobs_flow_running (queue, key_limits->>'key')`, no deduplication | leased, counted | limited fetches' counts |
//!
//! Lists and bulk operations (retry, cancel, delete by filter) select the jobs in id order with
//! only the conditions the filter sets, so each condition can use its index; a bulk operation
//! is one statement per batch, which locks its batch (`ORDER BY id LIMIT n FOR UPDATE`),
//! applies the action and answers what it changed and where the next batch starts.
//!
//! The hot path is one statement per batch, each carrying its rows as arrays (`unnest`):
//!
//! - enqueue: one `INSERT … SELECT FROM unnest(…) ON CONFLICT (queue, unique_key) DO NOTHING`
//!   that also reports, for a held unique key, the active job holding it, and calls
//!   `pg_notify` once per queue that got a ready job (unless other enqueues of the process are
//!   under way: then a task notifies after the commit, coalesced);
//! - fetch: a CTE reading each queue through `jobs_ready` with `ORDER BY priority, run_at, id
//!   LIMIT n FOR UPDATE SKIP LOCKED`, then `UPDATE … RETURNING` the leased rows. A worker that
//!   names the jobs it knows passes two parallel arrays, the names and the newest version of
//!   each, and a row is taken when `version <= versions[array_position(names, name)]` (NULL,
//!   so not taken, for a name not listed): a filter on the rows the scan reads anyway, with
//!   one array lookup per row, as the name filter it replaced cost;
//! - complete, fail, release, renew: one `UPDATE … FROM unnest(ids, tokens, …)` whose
//!   `WHERE lease_token = token AND status = 'running'` fences out stale workers, returning the
//!   ids it accepted (complete also accepts, unchanged, a completed row under its token, and
//!   adds the jobs it completed to `finished_counts`; complete, fail and rescue apply the
//!   effects of the workflow steps they end, looking the targets up by primary key).
//!
//! A session keeps a statement's generic plan until the table's statistics change, so a plan
//! made while `jobs` was small (a new schema; a server whose autovacuum has not analyzed it
//! since) would scan the grown table whole. The hottest statements therefore run inside
//! functions of the schema whose plans are generic from the first call and never scan `jobs`
//! sequentially: `complete_jobs` (migration 0012; 0019 runs the effects of steps apart, 0021
//! looks for repeated completions only in a batch that completed fewer jobs than it holds),
//! `fetch_ready`, the fetch of several queues (0014, which also saves the planning that
//! statement cost on every call), and `renew_leases` (0015); `fetch_limited` and
//! `fetch_unkeyed` were already so, and `fetch_unkeyed_one`, the limited fetch of one queue
//! (0016), is too. None of these functions uses JIT (0016): a plan whose estimate crossed
//! `jit_above_cost` would compile its expressions on every call, about 100 ms, for a statement
//! that runs in one. The tag index keeps no GIN pending list (0013), which every tag lookup,
//! such as reading a workflow, read whole.
//!
//! Time is always a parameter (`now`), never the server's `now()`, so tests control it.
//! Wake-ups go through `pg_notify` on a channel named like the schema, with the queue name as
//! the payload; a notification sent inside a transaction is delivered when it commits.
//!
//! Pickup (migration 0020): an idle worker's fetch of one queue that finds nothing writes an
//! offer of its idle places to the unlogged table `offers` (`queue, worker` → `offer, places,
//! delivered, names, versions, lease_ms, at, until, channel`). One job enqueued by itself goes
//! through the schema's `deliver_one` function while its producer's last enqueue into the queue
//! saw an offer (the plain one-row INSERT otherwise, which says whether it saw one): when a
//! standing offer may take the job, the function stores it running under a lease to that worker
//! and notifies it on the worker's instance's channel (`jobs_deliver_<uuid>`, heard on the
//! wake-up connection) in the same transaction, so the worker starts it when the enqueue
//! commits, without a fetch. See `offers.rs`.
//!
//! Migrations (in `jobs-postgres/migrations`, embedded with `sqlx::migrate!`) are applied by
//! [`PgBackend::migrate`](crate::PgBackend::migrate) in one transaction that first takes a
//! transaction-scoped advisory lock keyed on the schema (so workers starting together apply
//! them once), then sets `search_path` to the schema for that transaction only and records
//! each applied version with its checksum in the schema's own `_jobs_migrations` table. No
//! connection is left with a changed `search_path`, and two schemas in one database migrate
//! independently.

use std::fmt;

use jobs_core::Error;

/// The schema used when none is named.
pub const DEFAULT_SCHEMA: &str = "jobs";

/// A validated schema name: a plain lowercase identifier, quoted wherever it enters SQL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Schema(String);

impl Schema {
    /// Checks that `name` matches `^[a-z_][a-z0-9_]{0,62}$` and is not reserved (`pg_…`).
    pub(crate) fn new(name: &str) -> Result<Self, Error> {
        let mut chars = name.chars();
        let plain = chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && name.len() <= 63;
        if !plain {
            return Err(Error::Invalid(format!(
                "invalid schema name `{name}`: expected a plain identifier of 1 to 63 \
                 characters: lowercase letters, digits and `_`, not starting with a digit"
            )));
        }
        if name.starts_with("pg_") {
            return Err(Error::Invalid(format!(
                "invalid schema name `{name}`: names starting with `pg_` are reserved by PostgreSQL"
            )));
        }
        Ok(Schema(name.to_string()))
    }

    /// The bare name (also the LISTEN/NOTIFY channel).
    pub(crate) fn name(&self) -> &str {
        &self.0
    }

    /// The name as a quoted identifier, ready to splice into SQL.
    pub(crate) fn quoted(&self) -> String {
        // Validation allows no `"`, so quoting needs no escaping.
        format!("\"{}\"", self.0)
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_identifiers() {
        for name in ["jobs", "_x", "tenant_42", &"a".repeat(63)] {
            assert_eq!(Schema::new(name).unwrap().name(), name);
        }
        assert_eq!(Schema::new("jobs").unwrap().quoted(), "\"jobs\"");
    }

    #[test]
    fn rejects_everything_else() {
        for name in [
            "",
            "Jobs",
            "1jobs",
            "jobs-x",
            "jobs\"; DROP TABLE x; --",
            "jobs.x",
            "pg_jobs",
            "é",
            &"a".repeat(64),
        ] {
            let err = Schema::new(name).unwrap_err();
            assert!(matches!(err, Error::Invalid(_)), "{name}: {err}");
        }
    }
}
