-- Puts a dead or cancelled job back to pending with fresh attempts, unless its unique key is
-- held by another active job (then `holder` names it and nothing changes). $1 id, $2 now,
-- $3 channel.
WITH target AS (
    SELECT id, queue, unique_key
    FROM {schema}.jobs
    WHERE id = $1 AND status IN ('dead', 'cancelled')
),
holder AS (
    SELECT h.id
    FROM {schema}.jobs h, target t
    WHERE h.queue = t.queue
      AND h.unique_key = t.unique_key
      AND h.status IN ('scheduled', 'pending', 'running')
    LIMIT 1
),
retried AS (
    UPDATE {schema}.jobs j
    SET status = 'pending',
        attempt = 0,
        run_at = $2,
        finished_at = NULL,
        lease_worker = NULL,
        lease_token = NULL,
        lease_expires_at = NULL
    FROM target t
    WHERE j.id = t.id AND NOT EXISTS (SELECT 1 FROM holder)
    RETURNING j.queue
),
notified AS (
    SELECT count(*) AS queues FROM (SELECT pg_notify($3, queue) FROM retried) n
)
SELECT (SELECT id FROM holder) AS holder,
       (SELECT t.unique_key FROM target t) AS unique_key,
       EXISTS (SELECT 1 FROM retried) AS retried
FROM notified
