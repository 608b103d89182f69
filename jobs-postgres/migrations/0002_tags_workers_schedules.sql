-- Tags, worker heartbeats, recorded cron schedules, and the queues of deleted jobs: what the
-- operations API, the CLI and the dashboard read. Applied like 0001, with `search_path` set to
-- the backend's schema for this transaction only.

-- Labels to find a job by (`order:42`). A constant default adds the column without rewriting
-- the table. Jobs without tags stay out of the GIN index (its predicate), so the hot path of
-- untagged jobs pays nothing for it; a tag filter repeats the predicate so that the planner can
-- use the index.
ALTER TABLE jobs ADD COLUMN tags text[] NOT NULL DEFAULT '{}';

CREATE INDEX jobs_tags ON jobs USING gin (tags)
    WHERE tags <> '{}';

-- Live worker processes: each heartbeat upserts its row, and rows whose heartbeat expired are
-- removed by the next heartbeat of any worker (and never listed).
CREATE TABLE workers (
    id          text        PRIMARY KEY,
    host        text        NOT NULL,
    pid         bigint      NOT NULL,
    queues      text[]      NOT NULL,
    concurrency bigint      NOT NULL,
    names       text[]      NOT NULL,
    started_at  timestamptz NOT NULL,
    last_seen   timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

-- The cron schedules the workers run, by the job's stored name, with when a worker last
-- recorded each; their last ticks are in `cron_ticks`.
CREATE TABLE schedules (
    name       text        PRIMARY KEY,
    queue      text        NOT NULL,
    expression text        NOT NULL,
    timezone   text        NOT NULL,
    seen_at    timestamptz NOT NULL
);

-- Queues that jobs were deleted from (by hand or by retention), so that a queue whose jobs are
-- all gone is still named. Queues that hold jobs are found in `jobs` itself, through its
-- indexes, so enqueueing writes nothing here.
CREATE TABLE queues (
    name text PRIMARY KEY
);
