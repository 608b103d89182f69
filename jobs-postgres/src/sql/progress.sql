-- Records a running job's progress. $1 id, $2 token, $3 percent.
--
-- It commits without waiting for the WAL flush: progress is a hint, and a crash that rolls
-- back the last report loses nothing the job needs (the next report, or the job's end,
-- replaces it). So a handler reporting often adds no flush of its own.
UPDATE {schema}.jobs
SET progress = $3
WHERE id = $1
  AND lease_token = $2
  AND status = 'running'
  AND (SELECT set_config('synchronous_commit', 'off', true) IS NOT NULL)
