-- Stores a batch of jobs in one statement. A job whose unique key is held by an active job of
-- its queue is not stored: `holder` names that job instead. Given a channel, ready jobs wake
-- listeners through pg_notify (delivered when the caller's transaction commits). When a queue
-- of the batch has a max depth it stores nothing and says `bounded`: the caller then takes the
-- guarded path, which counts the depth under a lock.
-- $1 ids, $2 names, $3 queues, $4 payloads, $5 priorities, $6 run_at, $7 statuses,
-- $8 max_attempts, $9 backoffs, $10 timeouts (ms), $11 trace contexts, $12 every job's tags in
-- one array, $13 and $14 where each job's tags start and end in it, $15 payload versions,
-- $16 workflow steps (JSON or NULL), $17 unique keys, $18 now, $19 channel or NULL (no wake-up).
WITH input AS (
    SELECT *
    FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int2[], $6::timestamptz[],
                $7::text[], $8::int4[], $9::text[], $10::int8[], $11::text[], $13::int4[],
                $14::int4[], $15::int4[], $16::text[], $17::text[])
         WITH ORDINALITY
         AS i(id, name, queue, payload, priority, run_at, status, max_attempts, backoff,
              timeout_ms, trace_context, tags_from, tags_to, version, step, unique_key, ord)
),
bound AS (
    SELECT EXISTS (SELECT FROM {schema}.queue_flow f
                   WHERE f.queue = ANY ($3::text[]) AND f.max_depth IS NOT NULL) AS bounded
),
inserted AS (
    INSERT INTO {schema}.jobs (id, name, queue, payload, version, priority, run_at, status,
                               max_attempts, backoff, timeout_ms, unique_key, trace_context,
                               tags, step, created_at)
    SELECT id, name, queue, payload::json, version, priority, run_at, status, max_attempts,
           backoff::jsonb, timeout_ms, unique_key, trace_context,
           ($12::text[])[tags_from:tags_to], step::jsonb, $18
    FROM input
    WHERE NOT (SELECT bounded FROM bound)
    ORDER BY ord
    ON CONFLICT (queue, unique_key)
        WHERE unique_key IS NOT NULL AND status IN ('waiting', 'scheduled', 'pending', 'running')
    DO NOTHING
    RETURNING id, queue, status
),
notified AS (
    SELECT count(*) AS queues
    FROM (SELECT pg_notify($19, q.queue)
          FROM (SELECT DISTINCT queue FROM inserted
                WHERE status = 'pending' AND $19::text IS NOT NULL) q) n
)
SELECT i.id, ins.id IS NOT NULL AS stored, held.id AS holder, bound.bounded
FROM input i
CROSS JOIN notified
CROSS JOIN bound
LEFT JOIN inserted ins ON ins.id = i.id
LEFT JOIN {schema}.jobs held
       ON ins.id IS NULL
      AND held.queue = i.queue
      AND held.unique_key = i.unique_key
      AND held.status IN ('waiting', 'scheduled', 'pending', 'running')
ORDER BY i.ord
