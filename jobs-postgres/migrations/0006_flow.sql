-- Flow control: queue limits, per-key limits, the sliding logs of starts, and the keys that
-- throttled and debounced jobs hold. Applied like 0001, with `search_path` set to the
-- backend's schema for this transaction only.

-- A job's own key limits, as enqueued (`{"key", "concurrency", "rate": {"limit", "period"}}`,
-- the period in ms), NULL for a job without. A job with key limits is leased only by a fetch
-- that checks them (the plain fetch filters `key_limits IS NULL`, on the rows it reads anyway).
ALTER TABLE jobs ADD COLUMN key_limits jsonb;

-- Whether the job's run counts against limits: set by every fetch that enforces limits (and,
-- for the jobs already running, by setting a queue's concurrency), so the plain fetch writes
-- nothing new. A constant default adds both columns without rewriting the table.
ALTER TABLE jobs ADD COLUMN flow_counted boolean NOT NULL DEFAULT false;

-- The counted running jobs per queue and key: what a limited fetch counts. Its predicate is on
-- the lease, as `jobs_leased`'s is (a lease is set exactly while a job runs), so no statement
-- naming `status = 'running'` picks it; rows leased by the plain fetch stay out of it.
CREATE INDEX jobs_flow_running ON jobs (queue, (key_limits ->> 'key'))
    WHERE lease_expires_at IS NOT NULL AND flow_counted;

-- Each queue with limits, or into which jobs with key limits were enqueued (`keyed`, which
-- stays true). A queue with neither has no row. Every enqueue reads its queues' `max_depth`
-- here (a primary-key probe of a small table), so no process caches it.
CREATE TABLE queue_flow (
    queue          text    PRIMARY KEY,
    concurrency    integer CHECK (concurrency >= 1),
    rate_limit     integer CHECK (rate_limit >= 1),
    rate_period_ms bigint  CHECK (rate_period_ms >= 1),
    max_depth      bigint  CHECK (max_depth >= 0),
    keyed          boolean NOT NULL DEFAULT false,
    CHECK ((rate_limit IS NULL) = (rate_period_ms IS NULL))
);

-- The sliding logs of starts: one row per fetch batch and rated scope (a queue, `key` NULL, or
-- a key within it), `n` jobs started `at`; `until` is when the row leaves every window of the
-- rate it was counted under, after which the next limited fetch of the queue removes it.
CREATE TABLE flow_starts (
    queue text        NOT NULL,
    key   text,
    at    timestamptz NOT NULL,
    until timestamptz NOT NULL,
    n     integer     NOT NULL CHECK (n >= 1)
);

CREATE INDEX flow_starts_scope ON flow_starts (queue, key, at);
CREATE INDEX flow_starts_until ON flow_starts (queue, until);

-- The keys coalescing enqueues hold, per queue: a throttle key's kept job and the end of its
-- window; a debounce key's last new job, which holds the key while it waits.
CREATE TABLE coalesce_keys (
    queue text        NOT NULL,
    mode  text        NOT NULL CHECK (mode IN ('throttle', 'debounce')),
    key   text        NOT NULL,
    job   uuid        NOT NULL,
    until timestamptz,
    PRIMARY KEY (queue, mode, key)
);
