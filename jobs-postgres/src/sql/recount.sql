-- Counts each queue's completed and cancelled jobs again from `jobs` and puts the exact counts
-- in place of `finished_counts`' rows (after workers of an older release finished jobs
-- uncounted, say). Run in a transaction that first takes
-- `LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE`, so that no write falls between the two.
WITH cleared AS (
    DELETE FROM {schema}.finished_counts
)
INSERT INTO {schema}.finished_counts (queue, status, n)
SELECT queue, status, count(*)
FROM {schema}.jobs
WHERE status IN ('completed', 'cancelled')
GROUP BY queue, status
