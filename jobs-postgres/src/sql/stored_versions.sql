-- How many waiting (pending, scheduled, or a workflow step waiting for its inputs) and running
-- jobs of the names $1 are stored at each version, by name (bytewise), then version; a version
-- without such jobs has no row. Run when a worker starts. The waiting rows are read through
-- `jobs_ready` and `jobs_waiting`, and the running ones through `jobs_leased` (a lease is set
-- exactly while a job runs), so the finished rows retained are not read.
SELECT w.name, w.version, count(*) AS jobs
FROM (
    SELECT r.name, r.version
    FROM {schema}.jobs r
    WHERE r.status IN ('pending', 'scheduled') AND r.name = ANY ($1::text[])
    UNION ALL
    SELECT r.name, r.version
    FROM {schema}.jobs r
    WHERE r.status = 'waiting' AND r.name = ANY ($1::text[])
    UNION ALL
    SELECT r.name, r.version
    FROM {schema}.jobs r
    WHERE r.lease_expires_at IS NOT NULL AND r.status = 'running'
      AND r.name = ANY ($1::text[])
) w
GROUP BY w.name, w.version
ORDER BY w.name COLLATE "C", w.version
