-- Hands leased jobs back to pending without spending their attempt: each keeps its run_at (its
-- place in the queue) unless a new one is given (a snooze). Jobs ready again wake listeners.
-- $1 ids, $2 tokens, $3 new run_at or NULL (keep), $4 now, $5 channel.
WITH released AS (
    UPDATE {schema}.jobs j
    SET status = 'pending',
        attempt = GREATEST(j.attempt - 1, 0),
        run_at = COALESCE(r.run_at, j.run_at),
        lease_worker = NULL,
        lease_token = NULL,
        lease_expires_at = NULL
    FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[]) AS r(id, token, run_at)
    WHERE j.id = r.id
      AND j.lease_token = r.token
      AND j.status = 'running'
    RETURNING j.id, j.queue, j.run_at
),
notified AS (
    SELECT count(*) AS queues
    FROM (SELECT pg_notify($5, q.queue)
          FROM (SELECT DISTINCT queue FROM released WHERE run_at <= $4) q) n
)
SELECT released.id FROM released CROSS JOIN notified
