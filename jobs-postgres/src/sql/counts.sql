-- A queue's jobs by status, one row per status that has jobs. $1 queue.
--
-- No part reads the finished rows of `jobs`, which grow with retention: completed and
-- cancelled are the sums of their delta rows in `finished_counts` (see its migration), and
-- each other status is counted through the partial index that holds only its rows, its
-- predicate repeated so that the planner can use it: pending and scheduled through
-- `jobs_ready`, running through `jobs_leased` (a lease is set exactly while a job runs), dead
-- through `jobs_dead`, waiting through `jobs_waiting`.
SELECT status, count(*) AS n
FROM {schema}.jobs
WHERE queue = $1 AND status IN ('pending', 'scheduled')
GROUP BY status
UNION ALL
SELECT 'running', count(*)
FROM {schema}.jobs
WHERE queue = $1 AND status = 'running' AND lease_expires_at IS NOT NULL
HAVING count(*) > 0
UNION ALL
SELECT 'waiting', count(*)
FROM {schema}.jobs
WHERE queue = $1 AND status = 'waiting'
HAVING count(*) > 0
UNION ALL
SELECT 'dead', count(*)
FROM {schema}.jobs
WHERE queue = $1 AND status = 'dead'
HAVING count(*) > 0
UNION ALL
SELECT status, sum(n)::bigint
FROM {schema}.finished_counts
WHERE queue = $1
GROUP BY status
HAVING sum(n) <> 0
