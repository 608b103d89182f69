-- Leases up to $3 ready jobs of the queues $1 in one round trip: the schema's `fetch_ready`
-- function (migration 0014, planned once per session). Each queue is read through the partial
-- ready index in run order (an index scan per queue, stopping after $3 rows), rows another
-- fetch holds are skipped, and the best $3 of all queues are leased, each with a fresh token;
-- jobs with key limits are left to the limited fetch (fetch_limited.sql), which checks them.
-- $1 queues, $2 now, $3 limit, $4 worker, $5 lease expiry, $6 the names the worker runs (NULL:
-- every job) and $7 the newest version it runs of each, in the same order: a job of another
-- name, or stored at a newer version, stays where it is.
SELECT {record}
FROM {schema}.fetch_ready($1::text[], $2::timestamptz, $3::int8, $4::text, $5::timestamptz,
                          $6::text[], $7::int4[]) j
