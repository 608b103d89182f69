-- Cancels, in one statement, the waiting, scheduled, pending and running jobs among up to $1 jobs
-- selected in id order (NULL: every selected job) by the conditions spliced in for
-- {selection}, which bind $3 onwards (see `select.rs`). A running job's lease is revoked, so
-- its worker's later writes are refused, and the queues' cancelled counts in
-- `finished_counts`, and their buckets of the minute of $2 in `finished_minutes`, gain the jobs
-- cancelled. $2 now (the finish time).
WITH picked AS (
    SELECT j.id, j.status
    FROM {schema}.jobs j
    WHERE {selection}
    ORDER BY j.id
    LIMIT $1
    FOR UPDATE
),
cancelled AS (
    UPDATE {schema}.jobs j
    SET status = 'cancelled',
        finished_at = $2,
        lease_worker = NULL,
        lease_token = NULL,
        lease_expires_at = NULL
    FROM picked p
    WHERE j.id = p.id
      AND p.status IN ('waiting', 'scheduled', 'pending', 'running')
    RETURNING j.id, j.queue
),
counted AS (
    INSERT INTO {schema}.finished_counts (queue, status, n)
    SELECT queue, 'cancelled', count(*) FROM cancelled GROUP BY queue
),
binned AS (
    INSERT INTO {schema}.finished_minutes (queue, minute, n)
    SELECT queue, date_bin('1 minute', $2::timestamptz, timestamptz 'epoch'), count(*)
    FROM cancelled
    GROUP BY queue
)
SELECT ARRAY(SELECT id FROM cancelled ORDER BY id) AS changed,
       '{}'::uuid[] AS held,
       '{}'::text[] AS held_keys,
       '{}'::uuid[] AS holders,
       (SELECT count(*) FROM picked) AS examined,
       (SELECT id FROM picked ORDER BY id DESC LIMIT 1) AS last
