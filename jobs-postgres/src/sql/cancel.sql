-- Cancels an active job (a running job's lease is revoked). $1 id, $2 now.
UPDATE {schema}.jobs
SET status = 'cancelled',
    finished_at = $2,
    lease_worker = NULL,
    lease_token = NULL,
    lease_expires_at = NULL
WHERE id = $1
  AND status IN ('scheduled', 'pending', 'running')
