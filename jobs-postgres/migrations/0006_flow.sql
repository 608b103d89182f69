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

-- The running total of each queue's own log (its rows with `key` NULL): `n` is the sum of their
-- `n`, kept by the limited fetch (`fetch_limited` below) as it adds and removes them, so a
-- fetch reads the starts inside its queue's window from one row, however many batches the
-- window holds.
CREATE TABLE flow_started (
    queue text   PRIMARY KEY,
    n     bigint NOT NULL
);

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

-- The limited fetch (see limited.rs), in one round trip: leases up to $3 ready jobs of the
-- queues $1 within their limits. Per queue $7 concurrency, $8 rate limit, $9 rate period (ms),
-- $10 keyed, $11 checked (false: a queue of the same fetch without limits, read as the plain
-- fetch reads it). $2 now, $3 limit, $4 worker, $5 lease expiry, $6 the names the worker runs
-- (NULL: every name), $12 how many candidates a keyed queue's scan looks at beyond its room,
-- $13 the schema's name.
--
-- Under READ COMMITTED each statement of a VOLATILE function takes its snapshot when it starts,
-- so each statement below sees what the ones before waited for and wrote. The first takes a
-- transaction-level advisory lock per checked queue, keyed (hashtext of `<schema>:flow`,
-- hashtext of the queue), in sorted order: the limited fetches of a queue take turns across
-- every process, until the calling statement's transaction ends, each seeing every lease the
-- previous holder committed. The second removes the checked queues' log rows that left every
-- window (those past `until`, and a rated queue's own rows once outside its window, were the
-- period shortened), takes them off the running totals (`flow_started`), and works out each
-- queue's room: the least of the limit, its concurrency less its counted running jobs
-- (`jobs_flow_running`), and its rate less its total. Without room anywhere the fetch ends
-- there; otherwise the third leases. A queue without keyed jobs is read as the plain fetch
-- reads it (its room, skipping locked rows). A keyed queue's scan reads room + $12 candidates
-- in run order (unlocked: concurrent lessees are excluded by the lock, the rest by the UPDATE
-- re-checking each row); a candidate with key limits is taken when it is within them counting
-- the earlier candidates of its key (its key's counted running jobs plus its place among them
-- within the concurrency, its key's starts inside its rate's window plus its place within the
-- rate), then the first `room` taken of each queue, then the best $3 of all. The starts are
-- logged per rated queue and key, and added to the queues' totals. The statements' plans are
-- made once per session (generic plans: planning them per call would cost more than running
-- them).
CREATE FUNCTION fetch_limited(
    text[], timestamptz, int8, text, timestamptz, text[],
    int4[], int4[], int8[], bool[], bool[], int8, text
)
RETURNS SETOF jobs
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    rooms int8[];
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext($13 || ':flow'), hashtext(c.queue))
    FROM (SELECT u.queue
          FROM unnest($1, $11) AS u(queue, checked)
          WHERE u.checked
          ORDER BY u.queue) c;

    WITH q AS (
        SELECT *
        FROM unnest($1, $7, $8, $9, $11) WITH ORDINALITY
             AS q(queue, concurrency, rate_limit, period_ms, checked, ord)
    ),
    pruned AS (
        DELETE FROM flow_starts s
        USING q
        WHERE s.queue = q.queue AND q.checked
          AND (s.until <= $2
               OR (s.key IS NULL AND s.at <= $2 - q.period_ms * interval '1 millisecond'))
        RETURNING s.queue, s.key, s.n
    ),
    gone AS (
        SELECT p.queue, sum(p.n) AS n FROM pruned p WHERE p.key IS NULL GROUP BY p.queue
    ),
    kept AS (
        UPDATE flow_started t SET n = t.n - gone.n FROM gone WHERE t.queue = gone.queue
    )
    SELECT array_agg(GREATEST(LEAST(
        $3,
        CASE WHEN q.concurrency IS NOT NULL THEN q.concurrency - (
            SELECT count(*)
            FROM jobs r
            WHERE r.queue = q.queue AND r.lease_expires_at IS NOT NULL AND r.flow_counted)
        END,
        CASE WHEN q.rate_limit IS NOT NULL THEN q.rate_limit
            - COALESCE((SELECT t.n FROM flow_started t WHERE t.queue = q.queue), 0)
            + COALESCE(gone.n, 0)
        END
    ), 0) ORDER BY q.ord)
    INTO rooms
    FROM q LEFT JOIN gone ON gone.queue = q.queue;

    IF NOT 0 < ANY (rooms) THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH q AS (
        SELECT *
        FROM unnest($1, $8, $9, $10, rooms) AS q(queue, rate_limit, period_ms, keyed, room)
    ),
    unkeyed AS (
        SELECT c.*
        FROM q
        CROSS JOIN LATERAL (
            SELECT r.id, r.queue, r.priority, r.run_at
            FROM jobs r
            WHERE r.queue = q.queue
              AND r.status IN ('pending', 'scheduled')
              AND r.run_at <= $2
              AND ($6 IS NULL OR r.name = ANY ($6))
              AND r.key_limits IS NULL
            ORDER BY r.priority, r.run_at, r.id
            LIMIT q.room
            FOR UPDATE SKIP LOCKED
        ) c
        WHERE NOT q.keyed AND q.room > 0
    ),
    candidates AS (
        SELECT c.*,
               row_number() OVER (PARTITION BY c.queue, c.key
                                  ORDER BY c.priority, c.run_at, c.id) AS nth
        FROM q
        CROSS JOIN LATERAL (
            SELECT r.id, r.queue, r.priority, r.run_at,
                   r.key_limits ->> 'key' AS key,
                   (r.key_limits ->> 'concurrency')::int8 AS key_concurrency,
                   (r.key_limits -> 'rate' ->> 'limit')::int8 AS key_rate,
                   (r.key_limits -> 'rate' ->> 'period')::int8 AS key_period_ms
            FROM jobs r
            WHERE r.queue = q.queue
              AND r.status IN ('pending', 'scheduled')
              AND r.run_at <= $2
              AND ($6 IS NULL OR r.name = ANY ($6))
            ORDER BY r.priority, r.run_at, r.id
            LIMIT q.room + $12
        ) c
        WHERE q.keyed AND q.room > 0
    ),
    key_running AS (
        SELECT k.queue, k.key, (
            SELECT count(*)
            FROM jobs r
            WHERE r.queue = k.queue AND (r.key_limits ->> 'key') = k.key
              AND r.lease_expires_at IS NOT NULL AND r.flow_counted) AS running
        FROM (SELECT DISTINCT queue, key FROM candidates WHERE key_concurrency IS NOT NULL) k
    ),
    key_started AS (
        SELECT k.queue, k.key, k.key_period_ms, (
            SELECT COALESCE(sum(s.n), 0)
            FROM flow_starts s
            WHERE s.queue = k.queue AND s.key = k.key
              AND s.at > $2 - k.key_period_ms * interval '1 millisecond') AS started
        FROM (SELECT DISTINCT queue, key, key_period_ms
              FROM candidates WHERE key_rate IS NOT NULL) k
    ),
    allowed AS (
        SELECT c.id, c.queue, c.priority, c.run_at,
               row_number() OVER (PARTITION BY c.queue
                                  ORDER BY c.priority, c.run_at, c.id) AS place
        FROM candidates c
        LEFT JOIN key_running kr ON kr.queue = c.queue AND kr.key = c.key
        LEFT JOIN key_started ks
               ON ks.queue = c.queue AND ks.key = c.key AND ks.key_period_ms = c.key_period_ms
        WHERE c.key IS NULL
           OR ((c.key_concurrency IS NULL OR kr.running + c.nth <= c.key_concurrency)
               AND (c.key_rate IS NULL OR ks.started + c.nth <= c.key_rate))
    ),
    picked AS (
        SELECT t.id
        FROM (SELECT a.id, a.priority, a.run_at
              FROM allowed a JOIN q ON q.queue = a.queue
              WHERE a.place <= q.room
              UNION ALL
              SELECT u.id, u.priority, u.run_at FROM unkeyed u) t
        ORDER BY t.priority, t.run_at, t.id
        LIMIT $3
    ),
    leased AS (
        UPDATE jobs j
        SET status = 'running', attempt = j.attempt + 1, started_at = $2, lease_worker = $4,
            lease_token = gen_random_uuid(), lease_expires_at = $5, flow_counted = true
        FROM picked
        WHERE j.id = picked.id
          AND j.status IN ('pending', 'scheduled')
          AND j.run_at <= $2
        RETURNING j.*
    ),
    started AS (
        SELECT l.queue, q.period_ms, count(*) AS n
        FROM leased l JOIN q ON q.queue = l.queue
        WHERE q.rate_limit IS NOT NULL
        GROUP BY l.queue, q.period_ms
    ),
    logged AS (
        INSERT INTO flow_starts (queue, key, at, until, n)
        SELECT s.queue, NULL, $2, $2 + s.period_ms * interval '1 millisecond', s.n
        FROM started s
        UNION ALL
        SELECT l.queue, l.key_limits ->> 'key', $2,
               $2 + max((l.key_limits -> 'rate' ->> 'period')::int8)
                    * interval '1 millisecond',
               count(*)
        FROM leased l
        WHERE (l.key_limits -> 'rate' ->> 'period') IS NOT NULL
        GROUP BY l.queue, l.key_limits ->> 'key'
    ),
    totals AS (
        INSERT INTO flow_started AS t (queue, n)
        SELECT s.queue, s.n FROM started s
        ON CONFLICT (queue) DO UPDATE SET n = t.n + EXCLUDED.n
    )
    SELECT * FROM leased;
END
$$;
