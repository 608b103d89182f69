-- Stores a batch of jobs in one statement. A job whose unique key is held by an active job of
-- its queue is not stored: `holder` names that job instead. Given a channel, ready jobs wake
-- listeners through pg_notify (delivered when the caller's transaction commits).
-- $1 ids, $2 names, $3 queues, $4 payloads, $5 priorities, $6 run_at, $7 max_attempts,
-- $8 backoffs, $9 timeouts (ms), $10 unique keys, $11 trace contexts, $12 now, $13 channel or
-- NULL (no wake-up).
WITH input AS (
    SELECT *
    FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int2[], $6::timestamptz[],
                $7::int4[], $8::text[], $9::int8[], $10::text[], $11::text[])
         WITH ORDINALITY
         AS i(id, name, queue, payload, priority, run_at, max_attempts, backoff, timeout_ms,
              unique_key, trace_context, ord)
),
inserted AS (
    INSERT INTO {schema}.jobs (id, name, queue, payload, priority, run_at, status, max_attempts,
                               backoff, timeout_ms, unique_key, trace_context, created_at)
    SELECT id, name, queue, payload::json, priority, run_at,
           CASE WHEN run_at > $12 THEN 'scheduled' ELSE 'pending' END,
           max_attempts, backoff::jsonb, timeout_ms, unique_key, trace_context, $12
    FROM input
    ORDER BY ord
    ON CONFLICT (queue, unique_key)
        WHERE unique_key IS NOT NULL AND status IN ('scheduled', 'pending', 'running')
    DO NOTHING
    RETURNING id, queue, status
),
notified AS (
    SELECT count(*) AS queues
    FROM (SELECT pg_notify($13, q.queue)
          FROM (SELECT DISTINCT queue FROM inserted
                WHERE status = 'pending' AND $13::text IS NOT NULL) q) n
)
SELECT i.id, ins.id IS NOT NULL AS stored, held.id AS holder
FROM input i
CROSS JOIN notified
LEFT JOIN inserted ins ON ins.id = i.id
LEFT JOIN {schema}.jobs held
       ON ins.id IS NULL
      AND held.queue = i.queue
      AND held.unique_key = i.unique_key
      AND held.status IN ('scheduled', 'pending', 'running')
ORDER BY i.ord
