-- Records failed attempts of a batch: the error is appended to the history with the attempt's
-- number and time, then the job waits for its retry (retry_at) or is dead (retry_at NULL). Jobs
-- whose retry is already due wake listeners. The jobs that become dead and are workflow steps
-- apply their step's `on_dead` effects in the same statement, through the schema's
-- `apply_step_effects` (migration 0021; a batch without such steps does not call it); the steps
-- those make ready wake listeners too.
-- $1 ids, $2 tokens, $3 error reports (JSON objects: kind, message, chain), $4 retry_at,
-- $5 now, $6 channel.
WITH failed AS (
    UPDATE {schema}.jobs j
    SET status = CASE WHEN f.retry_at IS NULL THEN 'dead' ELSE 'pending' END,
        run_at = COALESCE(f.retry_at, j.run_at),
        finished_at = CASE WHEN f.retry_at IS NULL THEN $5 ELSE j.finished_at END,
        errors = j.errors || jsonb_build_array(
            jsonb_build_object('attempt', j.attempt, 'at', $5::timestamptz) || f.report::jsonb),
        lease_worker = NULL,
        lease_token = NULL,
        lease_expires_at = NULL
    FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[]) WITH ORDINALITY
         AS f(id, token, report, retry_at, ord)
    WHERE j.id = f.id
      AND j.lease_token = f.token
      AND j.status = 'running'
    RETURNING j.id, j.queue, j.status, j.run_at,
              CASE WHEN j.status = 'dead' THEN j.step -> 'on_dead' END AS effects, f.ord
),
stepped AS (
    SELECT {schema}.apply_step_effects(array_agg(effects), array_agg(NULL::text), array_agg(ord),
                                       $5, NULL) AS woken
    FROM failed
    WHERE effects IS NOT NULL AND effects <> '[]'::jsonb
    HAVING count(*) > 0
),
notified AS (
    SELECT count(*) AS queues
    FROM (SELECT pg_notify($6, q.queue)
          FROM (SELECT queue FROM failed WHERE status = 'pending' AND run_at <= $5
                UNION
                SELECT unnest(woken) FROM stepped) q) n
)
SELECT failed.id FROM failed CROSS JOIN notified
