-- Stores the limits of queue $1, replacing any: $2 concurrency, $3 rate limit, $4 rate period
-- (ms), $5 max depth, each NULL for none. All NULL removes them: the row goes, unless the
-- queue is keyed (it stays, limitless). A concurrency also marks the queue's running jobs as
-- counted (`jobs_flow_running`), those leased before by fetches that did not count them,
-- locking them in the order of their ids as the workers' batch writes do (writes.rs), so that
-- it never deadlocks with a renewal or a completion of the same jobs.
WITH limited AS (
    SELECT $2::int4 IS NOT NULL OR $3::int4 IS NOT NULL OR $5::int8 IS NOT NULL AS any
),
stored AS (
    INSERT INTO {schema}.queue_flow AS f (queue, concurrency, rate_limit, rate_period_ms,
                                          max_depth)
    SELECT $1, $2, $3, $4, $5 FROM limited WHERE limited.any
    ON CONFLICT (queue) DO UPDATE
    SET concurrency = EXCLUDED.concurrency,
        rate_limit = EXCLUDED.rate_limit,
        rate_period_ms = EXCLUDED.rate_period_ms,
        max_depth = EXCLUDED.max_depth
),
cleared AS (
    UPDATE {schema}.queue_flow f
    SET concurrency = NULL, rate_limit = NULL, rate_period_ms = NULL, max_depth = NULL
    FROM limited
    WHERE f.queue = $1 AND f.keyed AND NOT limited.any
),
removed AS (
    DELETE FROM {schema}.queue_flow f
    USING limited
    WHERE f.queue = $1 AND NOT f.keyed AND NOT limited.any
),
counted AS (
    UPDATE {schema}.jobs j
    SET flow_counted = true
    FROM (SELECT r.id
          FROM {schema}.jobs r
          WHERE $2::int4 IS NOT NULL
            AND r.lease_expires_at IS NOT NULL
            AND r.queue = $1
            AND NOT r.flow_counted
          ORDER BY r.id
          FOR UPDATE) l
    WHERE j.id = l.id
)
SELECT 1
