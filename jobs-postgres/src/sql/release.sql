-- Hands leased jobs back to pending without spending their attempt, and wakes listeners.
-- $1 ids, $2 tokens, $3 channel.
WITH released AS (
    UPDATE {schema}.jobs j
    SET status = 'pending',
        attempt = GREATEST(j.attempt - 1, 0),
        lease_worker = NULL,
        lease_token = NULL,
        lease_expires_at = NULL
    FROM unnest($1::uuid[], $2::uuid[]) AS r(id, token)
    WHERE j.id = r.id
      AND j.lease_token = r.token
      AND j.status = 'running'
    RETURNING j.id, j.queue
),
notified AS (
    SELECT count(*) AS queues
    FROM (SELECT pg_notify($3, q.queue) FROM (SELECT DISTINCT queue FROM released) q) n
)
SELECT released.id FROM released CROSS JOIN notified
