-- Records a running job's progress. $1 id, $2 token, $3 percent.
UPDATE {schema}.jobs
SET progress = $3
WHERE id = $1
  AND lease_token = $2
  AND status = 'running'
