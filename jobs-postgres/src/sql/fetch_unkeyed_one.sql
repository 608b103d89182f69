-- Leases up to $3 ready jobs of the queue $1 within its limits, none of its jobs keyed, in one
-- round trip, and reserves up to $14 more beyond its concurrency: the schema's
-- `fetch_unkeyed_one` function (migrations 0016, 0017 and 0018) locks the queue, then counts,
-- leases and logs in short statements. $2 now, $4 worker, $5 lease expiry, $6 the names the worker
-- runs (NULL: every job) and $7 the newest version it runs of each; $8 concurrency, $9 rate
-- limit, $10 rate period (ms), each NULL for none; $11 the schema's name; $12 the ids and $13
-- the lease tokens of the worker's ended leases. A row is `reserved` when no running count
-- sees it; once promoted, its worker's places count it (0018).
SELECT {record}, (NOT j.flow_counted AND $8::int4 IS NOT NULL) AS reserved
FROM {schema}.fetch_unkeyed_one($1::text, $2::timestamptz, $3::int8, $4::text, $5::timestamptz,
                                $6::text[], $7::int4[], $8::int4, $9::int4, $10::int8,
                                $11::text, $12::uuid[], $13::uuid[], $14::int8) j
