-- Stores a batch of jobs none of which has a unique key, in one statement: a plain
-- INSERT … SELECT FROM unnest(…), with no conflict arbiter and nothing joined back (a
-- primary-key clash is an error, as with the general statement). The caller lists in $19 the
-- queues to wake (those that got a ready job, or none when it wakes them itself after the
-- commit); each is notified once, delivered when the transaction commits. When a queue of the
-- batch has a max depth it stores nothing (one probe of `queue_flow` per statement): the
-- caller then takes the guarded path, which counts the depth under a lock.
-- $1 ids, $2 names, $3 queues, $4 payloads, $5 priorities, $6 run_at, $7 statuses,
-- $8 max_attempts, $9 backoffs, $10 timeouts (ms), $11 trace contexts, $12 every job's tags in
-- one array, $13 and $14 where each job's tags start and end in it, $15 payload versions,
-- $16 workflow steps (JSON or NULL), $17 now, $18 channel, $19 queues to wake.
INSERT INTO {schema}.jobs (id, name, queue, payload, version, priority, run_at, status,
                           max_attempts, backoff, timeout_ms, trace_context, tags, step,
                           created_at)
SELECT i.id, i.name, i.queue, i.payload::json, i.version, i.priority, i.run_at, i.status,
       i.max_attempts, i.backoff::jsonb, i.timeout_ms, i.trace_context,
       ($12::text[])[i.tags_from:i.tags_to], i.step::jsonb, $17
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int2[], $6::timestamptz[],
            $7::text[], $8::int4[], $9::text[], $10::int8[], $11::text[], $13::int4[],
            $14::int4[], $15::int4[], $16::text[])
     AS i(id, name, queue, payload, priority, run_at, status, max_attempts, backoff, timeout_ms,
          trace_context, tags_from, tags_to, version, step)
CROSS JOIN (SELECT count(pg_notify($18, w.queue)) FROM unnest($19::text[]) AS w(queue)) AS woken
WHERE NOT EXISTS (SELECT FROM {schema}.queue_flow f
                  WHERE f.queue = ANY ($3::text[]) AND f.max_depth IS NOT NULL)
