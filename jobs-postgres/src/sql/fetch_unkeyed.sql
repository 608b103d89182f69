-- Leases up to $3 ready jobs of the queues $1 within their limits, none of them keyed, in one
-- round trip: the schema's `fetch_unkeyed` function (migration 0011) locks the checked queues,
-- then counts, leases and logs in one statement. $2 now, $3 limit, $4 worker, $5 lease expiry,
-- $6 the names the worker runs (NULL: every job) and $12 the newest version it runs of each;
-- per queue $7 concurrency, $8 rate limit, $9 rate period (ms), $10 checked; $11 the schema's
-- name; $13 the ids and $14 the lease tokens of the worker's ended leases.
SELECT {record}
FROM {schema}.fetch_unkeyed($1::text[], $2::timestamptz, $3::int8, $4::text,
                            $5::timestamptz, $6::text[], $7::int4[], $8::int4[], $9::int8[],
                            $10::bool[], $11::text, $12::int4[], $13::uuid[], $14::uuid[]) j
