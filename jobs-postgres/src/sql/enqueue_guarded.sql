-- The last statement of a guarded enqueue, once every job's fate is known: stores the new jobs
-- (a unique key taken meanwhile by an enqueue that holds no lock fails the statement, and the
-- enqueue starts over), folds debounced jobs into the waiting jobs holding their keys, records
-- the keys the new jobs took, marks the queues that got jobs with key limits as keyed, and
-- wakes the queues given. Answers how many jobs it stored and folded.
-- $1 to $16 the new jobs' columns as in enqueue.sql, $17 unique keys, $18 key limits (JSON or
-- NULL), $19 now; folded into waiting jobs: $20 ids, $21 payloads, $22 run_at, $23 statuses,
-- $24 payload versions; keys taken: $25 queues, $26 modes, $27 keys, $28 jobs, $29 until
-- (throttle) or NULL; $30 queues now keyed; $31 channel or NULL (no wake-up), $32 queues to
-- wake.
WITH inserted AS (
    INSERT INTO {schema}.jobs (id, name, queue, payload, version, priority, run_at, status,
                               max_attempts, backoff, timeout_ms, unique_key, trace_context,
                               tags, key_limits, step, created_at)
    SELECT i.id, i.name, i.queue, i.payload::json, i.version, i.priority, i.run_at, i.status,
           i.max_attempts, i.backoff::jsonb, i.timeout_ms, i.unique_key, i.trace_context,
           ($12::text[])[i.tags_from:i.tags_to], i.key_limits::jsonb, i.step::jsonb, $19
    FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int2[], $6::timestamptz[],
                $7::text[], $8::int4[], $9::text[], $10::int8[], $11::text[], $13::int4[],
                $14::int4[], $15::int4[], $16::text[], $17::text[], $18::text[])
         AS i(id, name, queue, payload, priority, run_at, status, max_attempts, backoff,
              timeout_ms, trace_context, tags_from, tags_to, version, step, unique_key,
              key_limits)
    RETURNING 1
),
folded AS (
    UPDATE {schema}.jobs j
    SET payload = d.payload::json, version = d.version, run_at = d.run_at, status = d.status
    FROM unnest($20::uuid[], $21::text[], $22::timestamptz[], $23::text[], $24::int4[])
         AS d(id, payload, run_at, status, version)
    WHERE j.id = d.id AND j.status IN ('pending', 'scheduled')
    RETURNING 1
),
held AS (
    INSERT INTO {schema}.coalesce_keys (queue, mode, key, job, until)
    SELECT h.queue, h.mode, h.key, h.job, h.until
    FROM unnest($25::text[], $26::text[], $27::text[], $28::uuid[], $29::timestamptz[])
         AS h(queue, mode, key, job, until)
    ON CONFLICT (queue, mode, key) DO UPDATE SET job = EXCLUDED.job, until = EXCLUDED.until
),
marked AS (
    INSERT INTO {schema}.queue_flow (queue, keyed)
    SELECT k.queue, true
    FROM unnest($30::text[]) AS k(queue)
    WHERE NOT EXISTS (SELECT FROM {schema}.queue_flow f WHERE f.queue = k.queue AND f.keyed)
    ON CONFLICT (queue) DO UPDATE SET keyed = true
),
notified AS (
    SELECT count(pg_notify($31, w.queue)) AS n
    FROM unnest($32::text[]) AS w(queue)
    WHERE $31::text IS NOT NULL
)
SELECT (SELECT count(*) FROM inserted) AS stored, (SELECT count(*) FROM folded) AS folded
FROM notified
