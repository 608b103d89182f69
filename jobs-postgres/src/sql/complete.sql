-- Completes a batch; only rows still running under the presented token change.
-- $1 ids, $2 tokens, $3 results, $4 now.
UPDATE {schema}.jobs j
SET status = 'completed',
    result = c.result::json,
    finished_at = $4,
    lease_worker = NULL,
    lease_token = NULL,
    lease_expires_at = NULL
FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS c(id, token, result)
WHERE j.id = c.id
  AND j.lease_token = c.token
  AND j.status = 'running'
RETURNING j.id
