-- Leases up to $3 ready jobs of one queue (the common case: a worker of one queue) in one
-- statement that plans in a fraction of the general one's time: no queue array, no lateral
-- join, no re-sort. The sub-select reads the partial ready index in run order, skipping rows
-- another fetch holds, and locks what it takes; the UPDATE then finds those rows by primary key
-- (`id = ANY(…)`, a plan that does not depend on how many rows the statistics expect).
-- Jobs with key limits are left to the limited fetch (fetch_limited.sql), which checks them.
-- $1 queue, $2 now, $3 limit, $4 worker, $5 lease expiry,
-- $6 the names the worker runs (NULL: every job) and $7 the newest version it runs of each, in
-- the same order: a job of another name, or stored at a newer version, stays where it is.
UPDATE {schema}.jobs j
SET {lease}
WHERE j.id = ANY (ARRAY(
    SELECT r.id
    FROM {schema}.jobs r
    WHERE r.queue = $1
      AND r.status IN ('pending', 'scheduled')
      AND r.run_at <= $2
      AND ($6::text[] IS NULL OR r.version <= ($7::int4[])[array_position($6, r.name)])
      AND r.key_limits IS NULL
    ORDER BY r.priority, r.run_at, r.id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
))
RETURNING {record}
