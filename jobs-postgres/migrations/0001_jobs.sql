-- The job store. Applied by jobs-postgres's own runner with `search_path` set (for this
-- transaction only) to the backend's schema, so the names below land in that schema.

CREATE TABLE jobs (
    id               uuid        PRIMARY KEY,
    name             text        NOT NULL,
    queue            text        NOT NULL,
    payload          json        NOT NULL,
    priority         smallint    NOT NULL,
    run_at           timestamptz NOT NULL,
    status           text        NOT NULL CHECK (status IN
                         ('scheduled', 'pending', 'running', 'completed', 'dead', 'cancelled')),
    attempt          integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts     integer     NOT NULL CHECK (max_attempts >= 1),
    backoff          jsonb       NOT NULL,
    timeout_ms       bigint,
    lease_worker     text,
    lease_token      uuid,
    lease_expires_at timestamptz,
    progress         smallint    NOT NULL DEFAULT 0,
    result           json,
    errors           jsonb       NOT NULL DEFAULT '[]',
    unique_key       text,
    trace_context    text,
    created_at       timestamptz NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz
);

-- A queue table churns: every job is inserted, updated twice (leased, finished) and, with
-- retention, deleted, so each job leaves dead row versions and dead index entries behind. The
-- fetch walks the ready index in run order from its start, where the entries of the jobs it
-- already took pile up until a vacuum removes them. PostgreSQL's defaults wait for 20 % of
-- the table to be dead (200,000 rows when 1,000,000 finished jobs are retained); vacuum this
-- table after 2 % (plus 1,000 rows), and analyze it as often, so the planner knows how many
-- jobs wait and run.
ALTER TABLE jobs SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02
);

-- Fetch: ready rows of a queue in run order. Only waiting rows are in it, so its size does not
-- grow with the finished rows retained.
CREATE INDEX jobs_ready ON jobs (queue, priority, run_at, id)
    WHERE status IN ('pending', 'scheduled');

-- Rescue: leased (running) rows by lease expiry. The predicate is on the lease, not on the
-- status, on purpose: a statement that names `status = 'running'` (complete, fail, renew,
-- release) cannot pick this index, whose statistics usually say it is nearly empty while it
-- holds the entries of every job that ran since the last vacuum; those statements go by
-- primary key. A lease is set exactly while a job runs.
CREATE INDEX jobs_leased ON jobs (lease_expires_at)
    WHERE lease_expires_at IS NOT NULL;

-- Unique jobs: one active job per (queue, key); the arbiter of enqueue's ON CONFLICT. Rows
-- without a key stay out of it, so most writes skip it.
CREATE UNIQUE INDEX jobs_unique_key ON jobs (queue, unique_key)
    WHERE unique_key IS NOT NULL AND status IN ('scheduled', 'pending', 'running');

-- Retention: finished rows of a queue, oldest first.
CREATE INDEX jobs_finished ON jobs (queue, finished_at, id)
    WHERE status IN ('completed', 'cancelled');

-- The dead-letter set of a queue, listed page by page.
CREATE INDEX jobs_dead ON jobs (queue, id)
    WHERE status = 'dead';

-- Cron: the last tick enqueued per schedule, so each tick is stored once across workers.
CREATE TABLE cron_ticks (
    schedule text        PRIMARY KEY,
    tick     timestamptz NOT NULL
);
