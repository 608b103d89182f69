-- Completes a batch; only rows still running under the presented token change.
-- $1 ids, $2 tokens, $3 results, $4 now, $5 relaxed: commit without waiting for the WAL flush.
--
-- Relaxed is what the worker's batched completions use (never a handler's completion
-- transaction, whose own writes keep the session's durability). It cannot lose an enqueue (no
-- job is created here) nor break the lease guarantee (no lease is handed out): if the server
-- crashes before the commit record reaches disk, the jobs are back to `running` under the
-- leases they had, which their worker no longer renews; they lapse, are rescued and run again,
-- exactly as when a worker dies between its handler's end and the completion write, which
-- at-least-once delivery already allows. The window is short: the next synchronous commit on
-- the server (the next fetch, enqueue, …) flushes these commit records with its own. In
-- exchange the completion does not wait for an fsync (one per batch, the hot path's only
-- other flush besides the fetch's).
-- The plan, custom or generic, is a nested loop over the items with a primary-key lookup each
-- (no other index serves `status = 'running'`: see the migration's `jobs_leased`), linear in
-- the batch whatever the statistics say. The durability switch is an uncorrelated sub-select,
-- so it runs once per statement, not once per row.
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
  AND (SELECT NOT $5::boolean OR set_config('synchronous_commit', 'off', true) IS NOT NULL)
RETURNING j.id
