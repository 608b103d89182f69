-- A queue's jobs by status. $1 queue.
SELECT status, count(*) AS n
FROM {schema}.jobs
WHERE queue = $1
GROUP BY status
