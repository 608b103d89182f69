-- The completion as a function (sql/complete.sql calls it), so that its plan never scans `jobs`
-- whole.
--
-- A completion finds its rows by primary key, a nested loop over the batch's items (and the
-- workflow targets likewise). PostgreSQL plans it by the size it believes `jobs` has, and a
-- session keeps a statement's generic plan until the table's statistics change: a plan made
-- while `jobs` was small (a new schema, a quiet queue) scanned the table whole on every
-- completion once it had grown, until autovacuum analyzed it (a minute or more). Measured on
-- the orders example, 1,000 orders on a new schema: the completions' plans read 3,600 rows
-- each by the end, and took 3.2 ms on average where an index lookup takes 0.15 ms. Sequential
-- scans are off inside this function (a lookup by key never wants one), and its plan is generic
-- from the first call (the five custom plans PostgreSQL makes first cost more to plan than to
-- run).
--
-- The body is the completion statement of the release before, with effects.sql (which says
-- how the effects apply) spliced in, schema unqualified (`search_path` is the schema's); a
-- later change to either is a later migration replacing this function. The columns it returns
-- are named apart from the statement's, which PL/pgSQL would take for its variables.
--
-- What the statement does, and why:
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
--
-- $1 ids, $2 tokens, $3 results, $4 now, $5 relaxed, $6 channel (NULL: the queues to wake are
-- returned instead of notified).
CREATE OR REPLACE FUNCTION complete_jobs(uuid[], uuid[], text[], timestamptz, boolean, text)
RETURNS TABLE (done_id uuid, done_token uuid, wake_queue text)
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
BEGIN
    RETURN QUERY
    WITH completed AS (
        UPDATE jobs j
        SET status = 'completed',
            result = c.result::json,
            finished_at = $4,
            lease_worker = NULL,
            lease_expires_at = NULL
        FROM unnest($1::uuid[], $2::uuid[], $3::text[]) WITH ORDINALITY
             AS c(id, token, result, ord)
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
    step_effects AS (
        SELECT (x.e ->> 'job')::uuid AS job,
               x.e ->> 'effect' = 'cancel' AS cancel,
               x.e ->> 'slot' AS slot,
               to_jsonb(CASE WHEN (x.e ->> 'result')::boolean THEN COALESCE(d.result, 'null')
                             ELSE 'null' END) AS value,
               d.at, d.ord, x.n
        FROM ended d
        CROSS JOIN LATERAL jsonb_array_elements(d.effects) WITH ORDINALITY AS x(e, n)
    ),
    step_targets AS (
        SELECT job,
               bool_or(cancel) AS cancel,
               max(at) AS at,
               COALESCE(jsonb_object_agg(slot, value ORDER BY ord DESC, n DESC)
                            FILTER (WHERE NOT cancel AND slot IS NOT NULL),
                        '{}'::jsonb) AS given
        FROM step_effects
        GROUP BY job
    ),
    step_locked AS (
        SELECT t.id
        FROM jobs t
        WHERE t.id = ANY (ARRAY(SELECT job FROM step_targets))
        ORDER BY t.id
        FOR UPDATE
    ),
    step_changed AS (
        UPDATE jobs t
        SET (status, run_at, finished_at, inputs) = (
                SELECT CASE WHEN a.cancel THEN 'cancelled'
                            WHEN m.filled >= (t.step ->> 'slots')::int8 THEN 'pending'
                            ELSE t.status END,
                       CASE WHEN NOT a.cancel AND m.filled >= (t.step ->> 'slots')::int8 THEN a.at
                            ELSE t.run_at END,
                       CASE WHEN a.cancel THEN a.at ELSE t.finished_at END,
                       CASE WHEN a.cancel THEN t.inputs ELSE m.inputs END
                FROM step_targets a
                CROSS JOIN LATERAL (
                    SELECT i.inputs, (SELECT count(*) FROM jsonb_object_keys(i.inputs)) AS filled
                    FROM (SELECT a.given || COALESCE(t.inputs, '{}'::jsonb) AS inputs) i) m
                WHERE a.job = t.id)
        WHERE t.id = ANY (ARRAY(SELECT id FROM step_locked))
          AND CASE t.status
                  WHEN 'waiting' THEN true
                  WHEN 'scheduled' THEN (SELECT a.cancel FROM step_targets a WHERE a.job = t.id)
                  WHEN 'pending' THEN (SELECT a.cancel FROM step_targets a WHERE a.job = t.id)
                  ELSE false
              END
        RETURNING t.id, t.queue, t.status, t.finished_at
    ),
    step_counted AS (
        INSERT INTO finished_counts (queue, status, n)
        SELECT queue, 'cancelled', count(*) FROM step_changed WHERE status = 'cancelled' GROUP BY queue
    ),
    step_binned AS (
        INSERT INTO finished_minutes (queue, minute, n)
        SELECT queue, date_bin('1 minute', finished_at, timestamptz 'epoch'), count(*)
        FROM step_changed
        WHERE status = 'cancelled'
        GROUP BY 1, 2
    ),
    step_woken AS (
        SELECT DISTINCT queue FROM step_changed WHERE status = 'pending'
    ),
    step_notified AS (
        SELECT count(pg_notify($6, queue)) AS n FROM step_woken WHERE $6::text IS NOT NULL
    ),
    counted AS (
        INSERT INTO finished_counts (queue, status, n)
        SELECT queue, 'completed', count(*) FROM completed GROUP BY queue
    ),
    binned AS (
        INSERT INTO finished_minutes (queue, minute, n)
        SELECT queue, date_bin('1 minute', $4::timestamptz, timestamptz 'epoch'), count(*)
        FROM completed
        GROUP BY queue
    ),
    repeated AS (
        UPDATE jobs j
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
    SELECT NULL, NULL, queue FROM step_woken WHERE $6::text IS NULL;
END
$$;
