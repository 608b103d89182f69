-- Every queue with limits or keyed jobs, sorted.
SELECT queue, concurrency, rate_limit, rate_period_ms, max_depth, keyed
FROM {schema}.queue_flow
ORDER BY queue
