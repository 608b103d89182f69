-- The effects of the workflow steps a statement just ended (spliced for {effects} into
-- fail.sql and rescue.sql, in the same statement as the write that ended them; the completion's
-- copy is in the `complete_jobs` function of migration 0019, which a change here must follow).
-- The statement first defines `ended`: one row per ended job that has effects to apply (a
-- non-empty list), with `effects` (the JSON array of its step's `on_complete` or `on_dead`),
-- `result` (its result as the text it was written in, NULL unless it completed), `ord` (its
-- place in the batch) and `at` (now). An ordinary job, or a step without effects, has no row
-- there, so it costs nothing here.
--
-- The effects are gathered per target job, so that one UPDATE changes each target once (a
-- statement cannot update a row twice), however many steps of the batch deliver to it (a group
-- completing together): a `deliver` fills its slot with the result (`"result": true`) or JSON
-- null, the earliest delivery of a slot winning, and a slot already filled keeps its value; a
-- waiting job whose slots are then all filled becomes pending, due at once. A `cancel` cancels
-- a waiting, scheduled or pending target (counted in `finished_counts` and `finished_minutes`
-- as every cancel is). A target in any other status is left alone. The targets are never the
-- jobs the statement ended (those were running), so no row is written twice. The queues that
-- got a ready job are in `step_woken`, for the statement to notify.
--
-- Each slot of `inputs` holds a JSON string whose content is the delivered value's text, as
-- it was written (a result is never cast to `jsonb`, which would rewrite its numbers, and
-- refuse a `\u0000` escape, failing the whole batch): record.rs unwraps it.
--
-- The targets are locked in id order (`step_locked`) before they are updated, so that two
-- statements delivering to the same targets wait for one another instead of deadlocking.
-- They are looked up by primary key only (`id = ANY` of their ids; the status test is a
-- CASE, which no index serves), so that no plan reads the ready or waiting indexes whole: a
-- hash join over them would build its bitmap before finding that there are no targets, on
-- every completion of an ordinary job.
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
    FROM {schema}.jobs t
    WHERE t.id = ANY (ARRAY(SELECT job FROM step_targets))
    ORDER BY t.id
    FOR UPDATE
),
step_changed AS (
    UPDATE {schema}.jobs t
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
    INSERT INTO {schema}.finished_counts (queue, status, n)
    SELECT queue, 'cancelled', count(*) FROM step_changed WHERE status = 'cancelled' GROUP BY queue
),
step_binned AS (
    INSERT INTO {schema}.finished_minutes (queue, minute, n)
    SELECT queue, date_bin('1 minute', finished_at, timestamptz 'epoch'), count(*)
    FROM step_changed
    WHERE status = 'cancelled'
    GROUP BY 1, 2
),
step_woken AS (
    SELECT DISTINCT queue FROM step_changed WHERE status = 'pending'
)
