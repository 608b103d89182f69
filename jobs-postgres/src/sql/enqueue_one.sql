-- Stores one job without a unique key: the common `job.enqueue(..)` as the cheapest statement
-- there is, a one-row INSERT (no arrays to unpack, no conflict arbiter, nothing joined back),
-- so it plans in microseconds. Given a channel, a ready job wakes listeners through the
-- RETURNING clause, once, delivered when the caller's transaction commits. It answers whether
-- an idle worker's offer stands in the queue (migration 0020), so that the producer's next
-- enqueue there tries `deliver_one.sql`. Into a queue with a max depth it stores nothing (a
-- primary-key probe of `queue_flow`): the caller then takes the guarded path, which counts the
-- depth under a lock.
-- $1 id, $2 name, $3 queue, $4 payload, $5 priority, $6 run_at, $7 status, $8 max_attempts,
-- $9 backoff, $10 timeout (ms), $11 trace context, $12 tags, $13 now, $14 channel or NULL (no
-- wake-up), $15 payload version, $16 workflow step (JSON or NULL).
INSERT INTO {schema}.jobs (id, name, queue, payload, version, priority, run_at, status,
                           max_attempts, backoff, timeout_ms, trace_context, tags, step,
                           created_at)
SELECT $1::uuid, $2::text, $3::text, $4::text::json, $15::int4, $5::int2, $6::timestamptz,
       $7::text, $8::int4, $9::text::jsonb, $10::int8, $11::text, $12::text[],
       $16::text::jsonb, $13::timestamptz
WHERE NOT EXISTS (SELECT FROM {schema}.queue_flow f WHERE f.queue = $3 AND f.max_depth IS NOT NULL)
RETURNING CASE WHEN $14::text IS NOT NULL THEN pg_notify($14, $3) END AS woken,
          EXISTS (SELECT FROM {schema}.offers x
                  WHERE x.queue = $3 AND x.places > 0 AND x.until > $13) AS offered,
          false AS delivered
