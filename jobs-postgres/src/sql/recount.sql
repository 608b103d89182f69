-- Counts each queue's completed and cancelled jobs again from `jobs` and puts the exact counts
-- in place of `finished_counts`' rows, and of `finished_minutes`' buckets (every minute of the
-- retained jobs, so no queue has a horizon until its next prune), after workers of an older
-- release finished jobs uncounted, say. Run in a transaction that first takes
-- `LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE`, so that no write falls between the two.
WITH finished AS (
    SELECT queue, status, date_bin('1 minute', finished_at, timestamptz 'epoch') AS minute,
           count(*) AS n
    FROM {schema}.jobs
    WHERE status IN ('completed', 'cancelled')
    GROUP BY 1, 2, 3
),
cleared AS (
    DELETE FROM {schema}.finished_counts
),
counted AS (
    INSERT INTO {schema}.finished_counts (queue, status, n)
    SELECT queue, status, sum(n) FROM finished GROUP BY queue, status
),
unbinned AS (
    DELETE FROM {schema}.finished_minutes
),
unbounded AS (
    DELETE FROM {schema}.finished_horizons
)
INSERT INTO {schema}.finished_minutes (queue, minute, n)
SELECT queue, minute, sum(n) FROM finished WHERE minute IS NOT NULL GROUP BY queue, minute
