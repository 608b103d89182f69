-- Completes a batch; only rows still running under the presented token change.
-- $1 ids, $2 tokens, $3 results, $4 now, $5 relaxed: commit without waiting for the WAL flush,
-- $6 channel, or NULL to leave the wake-ups to the caller. Returns the id and token of each
-- accepted job; without a channel, also a row (NULL, NULL, queue) per queue that got a ready
-- step, for the caller to wake once the transaction has committed.
--
-- A completed row keeps the token of the lease it was completed under (its worker and expiry
-- are cleared, so it leaves `jobs_leased`), and a completion repeated under that token (the
-- first one applied but its reply was lost) is accepted again without changing the row's
-- values: it rewrites the row as it is, so it waits for, and sees, a first completion still
-- being committed. Any other token is refused.
--
-- Relaxed is what the worker's batched completions use unless the backend's
-- `durable_completions` is on (never a handler's completion transaction, whose own writes
-- keep the session's durability). It cannot lose an enqueue (no job is created here) nor break
-- the lease guarantee (no lease is handed out): if the server crashes before the commit record
-- reaches disk, the jobs are back to `running` under the leases they had, which their worker
-- no longer renews; they lapse, are rescued and run again, exactly as when a worker dies
-- between its handler's end and the completion write, which at-least-once delivery already
-- allows. The window is short: the next synchronous commit on
-- the server (the next fetch, enqueue, …) flushes these commit records with its own. In
-- exchange the completion does not wait for an fsync (one per batch, the hot path's only
-- other flush besides the fetch's).
--
-- The completion runs as two updates so that the jobs it completes are told from those it
-- completes again, and counted in `finished_counts` and `finished_minutes` (one delta row per
-- queue, all in the minute of $4): `completed`
-- takes the rows still running, and `repeated` rewrites, as they are, the rows of the items
-- `completed` did not take that are completed under the presented token. A repeat that meets
-- a first completion still being committed waits for it in `completed`, finds the row no longer
-- running (PostgreSQL re-checks the condition on the committed row) and is left to `repeated`,
-- whose snapshot still shows the row running (hence its `IN`): it too waits, re-checks the
-- committed row and finds it completed, so no job is counted twice. The plan, custom or
-- generic, is a nested loop over the items with a primary-key lookup each (no other index
-- serves `status = 'running'` or `'completed'`: see the migration's `jobs_leased`), linear in
-- the batch whatever the statistics say; `repeated` looks up only the items `completed` did
-- not take, usually none. The durability switch is an uncorrelated sub-select, so it runs once
-- per statement, not once per row.
--
-- The jobs `completed` takes that are workflow steps apply their step's `on_complete` effects
-- (see effects.sql) in the same statement, so the batch stays one statement and one commit;
-- the steps they make ready wake their queues' listeners on $6, or are returned for the
-- caller to wake (a handler's completion transaction wakes them after its commit, so that the
-- commit, which waits for the WAL flush, does not hold Postgres' notification lock meanwhile:
-- every other notifying commit would wait on it; should that commit's reply be lost, a retry
-- is taken by `repeated`, which applies and returns nothing, and the workers find the step at
-- their next poll). `completed` hands on the effects and the result of a step only (NULL for
-- any other job), so an ordinary job, or a step without effects, costs nothing more; the
-- result is handed on as the text the client sent, never cast to `jsonb` (which would refuse
-- a `\u0000` escape and fail the whole batch); `repeated` applies no effect.
WITH completed AS (
    UPDATE {schema}.jobs j
    SET status = 'completed',
        result = c.result::json,
        finished_at = $4,
        lease_worker = NULL,
        lease_expires_at = NULL
    FROM unnest($1::uuid[], $2::uuid[], $3::text[]) WITH ORDINALITY AS c(id, token, result, ord)
    WHERE j.id = c.id
      AND j.lease_token = c.token
      AND j.status = 'running'
      AND (SELECT NOT $5::boolean OR set_config('synchronous_commit', 'off', true) IS NOT NULL)
    RETURNING j.id, j.lease_token, j.queue, j.step -> 'on_complete' AS effects,
              CASE WHEN j.step IS NOT NULL THEN c.result END AS step_result, c.ord
),
ended AS (
    SELECT effects, step_result AS result, ord, $4::timestamptz AS at
    FROM completed
    WHERE effects IS NOT NULL AND effects <> '[]'::jsonb
),
{effects},
step_notified AS (
    SELECT count(pg_notify($6, queue)) AS n FROM step_woken WHERE $6::text IS NOT NULL
),
counted AS (
    INSERT INTO {schema}.finished_counts (queue, status, n)
    SELECT queue, 'completed', count(*) FROM completed GROUP BY queue
),
binned AS (
    INSERT INTO {schema}.finished_minutes (queue, minute, n)
    SELECT queue, date_bin('1 minute', $4::timestamptz, timestamptz 'epoch'), count(*)
    FROM completed
    GROUP BY queue
),
repeated AS (
    UPDATE {schema}.jobs j
    SET status = 'completed'
    FROM unnest($1::uuid[], $2::uuid[]) AS c(id, token)
    WHERE j.id = c.id
      AND NOT EXISTS (SELECT 1 FROM completed d WHERE d.id = c.id)
      AND j.lease_token = c.token
      AND j.status IN ('running', 'completed')
    RETURNING j.id, j.lease_token
)
SELECT id, lease_token, NULL AS woken FROM completed CROSS JOIN step_notified
UNION ALL
SELECT id, lease_token, NULL FROM repeated
UNION ALL
SELECT NULL, NULL, queue FROM step_woken WHERE $6::text IS NULL
