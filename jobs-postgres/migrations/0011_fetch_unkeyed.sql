-- The limited fetch of queues that hold no keyed jobs, in two statements where `fetch_limited`
-- takes five: the lock, then one statement that prunes the rate logs, counts the rooms, leases,
-- logs the starts and returns the rows leased. A fetch of such queues (a global concurrency
-- limit, a rate, or both) is the common limited fetch; it now costs about as much as the plain
-- fetch plus the count, since PL/pgSQL sets up each statement's executor on every call and
-- passing the rows through an array cost a copy. Keyed queues keep `fetch_limited` (0010).
--
-- Only a queue's concurrency counts its running jobs, so only its leases are marked counted
-- (`flow_counted`, which puts them in `jobs_flow_running`): a queue with a rate alone leases
-- as the plain fetch does, with no entry in that index to write and later skip. Setting a
-- concurrency marks the jobs already running (`set_limits.sql`).
--
-- Both functions take the same advisory locks (hashtext of `<schema>:flow`, hashtext of the
-- queue, in sorted order), so this fetch, the keyed one and those of the releases before take
-- turns on a queue across every process, whichever a worker calls.
--
-- The lock is the first statement and the rest the second: each statement of a VOLATILE
-- function takes a fresh snapshot, so the second sees every lease and every log row that the
-- previous holder committed. Within the second, every CTE reads that one snapshot: the rate's
-- room is its running total less the log rows this statement prunes, and the total is written
-- once, as the starts logged less the rows pruned.
--
-- A queue's log is pruned only when the rate could hold this fetch back (the room its total
-- leaves is under the fetch's limit) or an eighth of the period after its last prune
-- (`flow_started.pruned_at`), so the log keeps at most 9/8 of a window. A total that still
-- counts starts out of the window leaves a room at least the fetch's limit, so the fetch
-- takes what an exact count gives; and each prune is one scan of the log's index and heap,
-- which hold the deleted rows until a vacuum (a prune on every fetch cost about 0.3 ms of a
-- 1 ms fetch).
--
-- $1 queues, $2 now, $3 limit, $4 worker, $5 lease expiry, $6 the names the worker runs (NULL:
-- every name) and $12 the newest version it runs of each; per queue $7 concurrency, $8 rate
-- limit, $9 rate period (ms), $10 checked (false: a queue of the same fetch without limits);
-- $11 the schema's name; $13 the ids and $14 the lease tokens of the worker's ended leases,
-- which no running count includes (see 0010).
-- When each queue's log was last pruned by `fetch_unkeyed` (NULL: not yet).
ALTER TABLE flow_started ADD COLUMN pruned_at timestamptz;

CREATE FUNCTION fetch_unkeyed(
    text[], timestamptz, int8, text, timestamptz, text[],
    int4[], int4[], int8[], bool[], text, int4[], uuid[], uuid[]
)
RETURNS SETOF jobs
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan
SET enable_bitmapscan = off
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext($11 || ':flow'), hashtext(c.queue))
    FROM (SELECT u.queue
          FROM unnest($1, $10) AS u(queue, checked)
          WHERE u.checked
          ORDER BY u.queue) c;

    RETURN QUERY
    WITH q AS (
        SELECT q.*, t.n AS total,
               q.rate_limit IS NOT NULL
               AND (t.pruned_at IS NULL
                    OR t.pruned_at <= $2 - q.period_ms * interval '1 millisecond' / 8
                    OR q.rate_limit - t.n < $3) AS prune
        FROM unnest($1, $7, $8, $9) AS q(queue, concurrency, rate_limit, period_ms)
        LEFT JOIN flow_started t ON t.queue = q.queue
    ),
    -- The queue's starts that left its window stop counting, when its log is due a prune.
    -- (A queue with keyed jobs has key rows as well, which `fetch_limited` prunes: this fetch
    -- never counts them.)
    pruned AS (
        DELETE FROM flow_starts s
        USING q
        WHERE s.queue = q.queue AND q.prune
          AND s.key IS NULL AND s.at <= $2 - q.period_ms * interval '1 millisecond'
        RETURNING s.queue, s.n
    ),
    -- Each queue's room is taken in run order, skipping the rows another fetch holds; the
    -- best $3 of all queues are leased, found by primary key.
    leased AS (
        UPDATE jobs j
        SET status = 'running', attempt = j.attempt + 1, started_at = $2, lease_worker = $4,
            lease_token = gen_random_uuid(), lease_expires_at = $5,
            flow_counted = (SELECT q.concurrency IS NOT NULL FROM q WHERE q.queue = j.queue)
        WHERE j.id = ANY (ARRAY(
            SELECT c.id
            FROM q
            CROSS JOIN LATERAL (
                SELECT r.id, r.priority, r.run_at
                FROM jobs r
                WHERE r.queue = q.queue
                  AND r.status IN ('pending', 'scheduled')
                  AND r.run_at <= $2
                  AND ($6 IS NULL OR r.version <= $12[array_position($6, r.name)])
                  AND r.key_limits IS NULL
                ORDER BY r.priority, r.run_at, r.id
                LIMIT GREATEST(LEAST(
                    $3,
                    CASE WHEN q.concurrency IS NOT NULL THEN q.concurrency - (
                        SELECT count(*)
                        FROM jobs k
                        WHERE k.queue = q.queue AND k.lease_expires_at IS NOT NULL
                          AND k.flow_counted
                          AND NOT EXISTS (SELECT 1 FROM unnest($13, $14) AS e(id, token)
                                          WHERE e.id = k.id AND e.token = k.lease_token))
                    END,
                    CASE WHEN q.rate_limit IS NOT NULL THEN q.rate_limit - COALESCE(q.total, 0)
                        + COALESCE((SELECT sum(p.n) FROM pruned p WHERE p.queue = q.queue), 0)
                    END
                ), 0)
                FOR UPDATE SKIP LOCKED
            ) c
            ORDER BY c.priority, c.run_at, c.id
            LIMIT $3
        ))
        RETURNING j.*
    ),
    -- The starts that rates count, logged, and each rated queue's running total less what
    -- left its window, with when its log was pruned.
    started AS (
        SELECT q.queue, q.period_ms, q.prune, count(l.id) AS n,
               COALESCE((SELECT sum(p.n) FROM pruned p WHERE p.queue = q.queue), 0) AS gone
        FROM q LEFT JOIN leased l ON l.queue = q.queue
        WHERE q.rate_limit IS NOT NULL
        GROUP BY q.queue, q.period_ms, q.prune
    ),
    logged AS (
        INSERT INTO flow_starts (queue, key, at, until, n)
        SELECT s.queue, NULL, $2, $2 + s.period_ms * interval '1 millisecond', s.n
        FROM started s
        WHERE s.n > 0
    ),
    totals AS (
        INSERT INTO flow_started AS t (queue, n, pruned_at)
        SELECT s.queue, s.n - s.gone, CASE WHEN s.prune THEN $2 END
        FROM started s
        WHERE s.n > 0 OR s.prune
        ON CONFLICT (queue) DO UPDATE
        SET n = t.n + EXCLUDED.n, pruned_at = COALESCE(EXCLUDED.pruned_at, t.pruned_at)
    )
    SELECT * FROM leased;
END
$$;
