-- Leases up to $3 ready jobs of the queues $1 within their limits, in one round trip: the
-- schema's `fetch_limited` function (migrations 0006, 0008 and 0010 say how) locks the checked
-- queues, then counts and leases. $2 now, $3 limit, $4 worker, $5 lease expiry, $6 the names
-- the worker runs (NULL: every job) and $14 the newest version it runs of each; per queue $7
-- concurrency, $8 rate limit, $9 rate period (ms), $10 keyed, $11 checked; $12 how many
-- candidates a keyed queue's scan looks at beyond its room, $13 the schema's name; $15 the ids
-- and $16 the lease tokens of the worker's ended leases, which no running count includes.
SELECT {record}
FROM {schema}.fetch_limited($1::text[], $2::timestamptz, $3::int8, $4::text,
                            $5::timestamptz, $6::text[], $7::int4[], $8::int4[], $9::int8[],
                            $10::bool[], $11::bool[], $12::int8, $13::text, $14::int4[],
                            $15::uuid[], $16::uuid[]) j
