-- The completion looks for repeated completions only when it needs to, and applies the effects
-- of workflow steps through a function of their own.
--
-- 0019's first statement updated the batch twice: once to complete the jobs still running under
-- their tokens (`completed`), once more to recognise a completion repeated after it applied
-- (`repeated`: the job completed under the same token, its reply lost). The second update joined
-- the whole batch to `jobs` again, though in a drain every job of a batch is completed by the
-- first: on 20,000 jobs in batches of 100, the function took 0.97-1.02 ms a batch against
-- 0.74-0.77 for the first update alone, and about 0.14 ms of that difference was `repeated`. Now
-- `repeated` is a statement of its own, run only when the first completed fewer jobs than the
-- batch holds; it excludes the jobs the first completed (which it now sees completed, being a
-- later statement) and otherwise matches as before: a job still running under the token (a
-- concurrent completion of it committed since) or completed under it.
--
-- The effects of workflow steps (0019's second statement) are unchanged, moved into
-- `apply_step_effects`, so that a later change to the completion restates only the completion.
-- The function's name, arguments, result and settings are 0019's, so `sql/complete.sql` calls it
-- as before.

-- Applies the `on_complete` effects of the workflow steps a completion ended: $1 each step's
-- effects, $2 its result (JSON text), $3 its place in the batch, $4 now, $5 the channel to
-- notify the queues that got a ready step on, or NULL to leave that to the caller. Returns
-- those queues.
CREATE OR REPLACE FUNCTION apply_step_effects(jsonb[], text[], int8[], timestamptz, text)
RETURNS text[]
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    woken text[];
BEGIN
    WITH ended AS (
        SELECT e.effects, e.result, e.ord, $4::timestamptz AS at
        FROM unnest($1, $2, $3) AS e(effects, result, ord)
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
        SELECT count(pg_notify($5, queue)) AS n FROM step_woken WHERE $5::text IS NOT NULL
    )
    SELECT array_agg(w.queue) INTO woken
    FROM step_woken w
    CROSS JOIN step_notified;
    RETURN woken;
END
$$;

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
    again_ids uuid[];
    again_tokens uuid[];
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
    )
    SELECT COALESCE(array_agg(d.id), '{}'), COALESCE(array_agg(d.lease_token), '{}'),
           array_agg(d.effects) FILTER (WHERE d.effects <> '[]'::jsonb),
           array_agg(d.step_result) FILTER (WHERE d.effects <> '[]'::jsonb),
           array_agg(d.ord) FILTER (WHERE d.effects <> '[]'::jsonb)
    INTO done_ids, done_tokens, ended_effects, ended_results, ended_ords
    FROM completed d;
    IF cardinality(done_ids) < cardinality($1) THEN
        WITH repeated AS (
            UPDATE jobs j
            SET status = 'completed'
            FROM unnest($1::uuid[], $2::uuid[]) AS c(id, token)
            WHERE j.id = c.id
              AND j.id <> ALL (done_ids)
              AND j.lease_token = c.token
              AND j.status IN ('running', 'completed')
            RETURNING j.id, j.lease_token
        )
        SELECT array_agg(r.id), array_agg(r.lease_token)
        INTO again_ids, again_tokens
        FROM repeated r;
        done_ids := done_ids || COALESCE(again_ids, '{}');
        done_tokens := done_tokens || COALESCE(again_tokens, '{}');
    END IF;
    IF ended_effects IS NOT NULL THEN
        woken := apply_step_effects(ended_effects, ended_results, ended_ords, $4, $6);
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
