-- The completion in two statements: the plain completion, then, only when a job it completed
-- is a workflow step with effects, the statement applying them.
--
-- 0012's `complete_jobs` did both in one statement, and its plan (a dozen CTEs, three updates of
-- `jobs`, four inserts, five aggregates) cost as much to start as to run: 0.42 ms a call on
-- this machine when it completed nothing, against 0.15 ms for the completion alone, paid by
-- every batch, and so by every job a handler's completion transaction finishes alone. Now a
-- batch without steps never starts the effects' plan, and a batch with steps starts both plans
-- (each cached by PL/pgSQL).
--
-- What each statement does, and why, is 0012's: the first is its `completed`, `counted`,
-- `binned` and `repeated` (one snapshot, which `repeated` relies on); the second is its effects
-- (`ended` onwards), fed from the first's completed steps. Moving them into a later statement
-- of the same transaction changes nothing they rely on: the targets are locked and re-checked
-- as before, in the order of their ids, after the batch's own rows (as the one statement
-- locked them). The function's name, arguments, result and settings are 0012's (with JIT off,
-- as 0016 set it), so `sql/complete.sql` calls it as before.
CREATE OR REPLACE FUNCTION complete_jobs(uuid[], uuid[], text[], timestamptz, boolean, text)
RETURNS TABLE (done_id uuid, done_token uuid, wake_queue text)
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    done_ids uuid[];
    done_tokens uuid[];
    ended_effects jsonb[];
    ended_results text[];
    ended_ords int8[];
    woken text[];
BEGIN
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
    ),
    done AS (
        SELECT id, lease_token, effects, step_result, ord FROM completed
        UNION ALL
        SELECT id, lease_token, NULL, NULL, NULL FROM repeated
    )
    SELECT array_agg(d.id), array_agg(d.lease_token),
           array_agg(d.effects) FILTER (WHERE d.effects <> '[]'::jsonb),
           array_agg(d.step_result) FILTER (WHERE d.effects <> '[]'::jsonb),
           array_agg(d.ord) FILTER (WHERE d.effects <> '[]'::jsonb)
    INTO done_ids, done_tokens, ended_effects, ended_results, ended_ords
    FROM done d;
    IF ended_effects IS NOT NULL THEN
        WITH ended AS (
            SELECT e.effects, e.result, e.ord, $4::timestamptz AS at
            FROM unnest(ended_effects, ended_results, ended_ords) AS e(effects, result, ord)
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
        )
        SELECT array_agg(w.queue) INTO woken
        FROM step_woken w
        CROSS JOIN step_notified;
    END IF;
    RETURN QUERY
    SELECT d.id, d.token, NULL::text
    FROM unnest(done_ids, done_tokens) AS d(id, token)
    UNION ALL
    SELECT NULL, NULL, w.queue
    FROM unnest(woken) AS w(queue)
    WHERE $6::text IS NULL;
END
$$;
