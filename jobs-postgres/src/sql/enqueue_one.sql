-- Stores one job without a unique key: the common `job.enqueue(..)`, through the schema's
-- `enqueue_one` function (migration 0020), a one-row INSERT planned once per session, unless an
-- idle worker's offer takes the job, leased to it and notified on its delivery channel. Given a
-- channel, a ready job that no offer took wakes listeners, once, delivered when the caller's
-- transaction commits. Into a queue with a max depth it stores nothing and answers false: the
-- caller then takes the guarded path, which counts the depth under a lock.
-- $1 id, $2 name, $3 queue, $4 payload, $5 priority, $6 run_at, $7 status, $8 max_attempts,
-- $9 backoff, $10 timeout (ms), $11 trace context, $12 tags, $13 now, $14 channel or NULL (no
-- wake-up), $15 payload version, $16 workflow step (JSON or NULL), $17 the job's record as
-- JSON, or NULL when no offer may take it.
SELECT {schema}.enqueue_one($1::uuid, $2::text, $3::text, $4::text, $5::int2, $6::timestamptz,
                            $7::text, $8::int4, $9::text, $10::int8, $11::text, $12::text[],
                            $13::timestamptz, $14::text, $15::int4, $16::text, $17::text)
    AS stored
