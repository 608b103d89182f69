-- Stores a batch of jobs none of which has a unique key, in one statement: a plain
-- INSERT … SELECT FROM unnest(…), with no conflict arbiter and nothing joined back (a
-- primary-key clash is an error, as with the general statement). The caller lists in $13 the
-- queues to wake (those that got a ready job, or none when it wakes them itself after the
-- commit); each is notified once, delivered when the transaction commits.
-- $1 ids, $2 names, $3 queues, $4 payloads, $5 priorities, $6 run_at, $7 max_attempts,
-- $8 backoffs, $9 timeouts (ms), $10 trace contexts, $11 now, $12 channel, $13 queues to wake.
INSERT INTO {schema}.jobs (id, name, queue, payload, priority, run_at, status, max_attempts,
                           backoff, timeout_ms, trace_context, created_at)
SELECT i.id, i.name, i.queue, i.payload::json, i.priority, i.run_at,
       CASE WHEN i.run_at > $11 THEN 'scheduled' ELSE 'pending' END,
       i.max_attempts, i.backoff::jsonb, i.timeout_ms, i.trace_context, $11
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int2[], $6::timestamptz[],
            $7::int4[], $8::text[], $9::int8[], $10::text[])
     AS i(id, name, queue, payload, priority, run_at, max_attempts, backoff, timeout_ms,
          trace_context)
CROSS JOIN (SELECT count(pg_notify($12, w.queue)) FROM unnest($13::text[]) AS w(queue)) AS woken
