-- How many jobs of queue $1 finished (completed or cancelled) at or after $2, exactly, in time
-- linear in the minutes counted rather than the jobs: the rows of `jobs` finished before the
-- first minute boundary at or after $2 (at most a minute of them, a range of the retention
-- index), plus the buckets of `finished_minutes` from that boundary on (see migration 0007).
-- When the boundary is before the queue's horizon, whose earlier buckets prune dropped, it
-- counts the range of the retention index from $2 instead.
WITH bounds AS (
    SELECT date_bin('1 minute', $2::timestamptz - interval '1 microsecond', timestamptz 'epoch')
               + interval '1 minute' AS boundary,
           (SELECT minute FROM {schema}.finished_horizons WHERE queue = $1) AS horizon
)
SELECT CASE
    WHEN b.boundary < b.horizon THEN
        (SELECT count(*)
         FROM {schema}.jobs
         WHERE queue = $1 AND status IN ('completed', 'cancelled') AND finished_at >= $2)
    ELSE
        (SELECT count(*)
         FROM {schema}.jobs
         WHERE queue = $1
           AND status IN ('completed', 'cancelled')
           AND finished_at >= $2
           AND finished_at < b.boundary)
        + (SELECT COALESCE(sum(n), 0)::bigint
           FROM {schema}.finished_minutes
           WHERE queue = $1 AND minute >= b.boundary)
END
FROM bounds b
