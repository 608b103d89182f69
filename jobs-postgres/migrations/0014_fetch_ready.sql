-- The plain fetch of several queues (sql/fetch.sql) as a function, planned once per session.
--
-- PostgreSQL planned the statement anew on every call: its generic plan, which expects ten
-- queues of the array, costs more than a custom plan for the two or three a worker names, so
-- the plan cache kept making custom ones. Planning took 0.6–1.2 ms against 0.3 ms of
-- execution, on every fetch of a worker of several queues (the orders example's, for one).
-- The function's plan is generic from the first call and reads the ready index per queue
-- whatever the statistics say, as `fetch_unkeyed` does: sequential scans are off (a plan made
-- while `jobs` was small must not scan it whole once it has grown, see 0012), and so are bitmap
-- scans (a plain index scan marks the dead entries of leased jobs that it passes, so that the
-- next fetch skips them; a bitmap scan never does).
--
-- The body is sql/fetch.sql of the release before with the lease written in, schema
-- unqualified (`search_path` is the schema's); a later change to it is a later migration
-- replacing this function. $1 queues, $2 now, $3 limit, $4 worker, $5 lease expiry, $6 the
-- names the worker runs (NULL: every job) and $7 the newest version it runs of each, in the
-- same order.
CREATE OR REPLACE FUNCTION fetch_ready(text[], timestamptz, int8, text, timestamptz, text[], int4[])
RETURNS SETOF jobs
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
BEGIN
    RETURN QUERY
    WITH picked AS (
        SELECT c.id
        FROM unnest($1) AS q(queue)
        CROSS JOIN LATERAL (
            SELECT r.id, r.priority, r.run_at
            FROM jobs r
            WHERE r.queue = q.queue
              AND r.status IN ('pending', 'scheduled')
              AND r.run_at <= $2
              AND ($6 IS NULL OR r.version <= $7[array_position($6, r.name)])
              AND r.key_limits IS NULL
            ORDER BY r.priority, r.run_at, r.id
            LIMIT $3
            FOR UPDATE SKIP LOCKED
        ) c
        ORDER BY c.priority, c.run_at, c.id
        LIMIT $3
    )
    UPDATE jobs j
    SET status = 'running', attempt = j.attempt + 1, started_at = $2, lease_worker = $4,
        lease_token = gen_random_uuid(), lease_expires_at = $5
    FROM picked
    WHERE j.id = picked.id
    RETURNING j.*;
END
$$;
