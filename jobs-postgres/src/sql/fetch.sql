-- Leases up to $3 ready jobs of the queues $1 in one round trip. Each queue is read through
-- the partial ready index in run order (an index scan per queue, stopping after $3 rows), rows
-- another fetch holds are skipped, and the best $3 of all queues are leased, each with a fresh
-- token; jobs with key limits are left to the limited fetch (fetch_limited.sql), which checks
-- them. $1 queues, $2 now, $3 limit, $4 worker, $5 lease expiry,
-- $6 the names the worker runs (NULL: every job) and $7 the newest version it runs of each, in
-- the same order: a job of another name, or stored at a newer version, stays where it is.
WITH picked AS (
    SELECT c.id
    FROM unnest($1::text[]) AS q(queue)
    CROSS JOIN LATERAL (
        SELECT r.id, r.priority, r.run_at
        FROM {schema}.jobs r
        WHERE r.queue = q.queue
          AND r.status IN ('pending', 'scheduled')
          AND r.run_at <= $2
          AND ($6::text[] IS NULL OR r.version <= ($7::int4[])[array_position($6, r.name)])
          AND r.key_limits IS NULL
        ORDER BY r.priority, r.run_at, r.id
        LIMIT $3
        FOR UPDATE SKIP LOCKED
    ) c
    ORDER BY c.priority, c.run_at, c.id
    LIMIT $3
)
UPDATE {schema}.jobs j
SET {lease}
FROM picked
WHERE j.id = picked.id
RETURNING {record}
