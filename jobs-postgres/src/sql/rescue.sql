-- Rescues up to $2 running jobs whose lease lapsed before $1, or (when $5 is not NULL) that
-- the gone workers $5 hold, whatever their lease: the loss is recorded as the attempt's error
-- ($3, a JSON object: kind, message, chain), then the job is pending again, keeping its run_at
-- and so its place among the ready jobs, or dead when out of attempts. $4 channel. The jobs
-- that become dead and are workflow steps apply their step's `on_dead` effects in the same
-- statement, through the schema's `apply_step_effects` (migration 0021), as fail.sql does; the
-- steps those make ready wake listeners too. The gone
-- workers' places under limits go with their jobs (their offers went just before, see
-- forget_offers.sql).
WITH unplaced AS (
    -- The places under limits that the gone workers' promoted jobs held (migration 0018).
    DELETE FROM {schema}.flow_places WHERE worker = ANY ($5)
),
lapsed AS (
    SELECT id
    FROM {schema}.jobs
    WHERE status = 'running'
      AND CASE WHEN $5::text[] IS NULL THEN lease_expires_at < $1
               ELSE lease_worker = ANY ($5) END
    ORDER BY lease_expires_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
),
rescued AS (
    UPDATE {schema}.jobs j
    SET status = CASE WHEN j.attempt < j.max_attempts THEN 'pending' ELSE 'dead' END,
        finished_at = CASE WHEN j.attempt < j.max_attempts THEN j.finished_at ELSE $1 END,
        errors = j.errors || jsonb_build_array(
            jsonb_build_object('attempt', j.attempt, 'at', $1::timestamptz) || $3::jsonb),
        lease_worker = NULL,
        lease_token = NULL,
        lease_expires_at = NULL
    FROM lapsed
    WHERE j.id = lapsed.id
    RETURNING j.id, j.queue, j.status,
              CASE WHEN j.status = 'dead' THEN j.step -> 'on_dead' END AS effects
),
stepped AS (
    SELECT {schema}.apply_step_effects(array_agg(effects), array_agg(NULL::text),
                                       array_agg(1::int8), $1, NULL) AS woken
    FROM rescued
    WHERE effects IS NOT NULL AND effects <> '[]'::jsonb
    HAVING count(*) > 0
),
notified AS (
    SELECT count(*) AS queues
    FROM (SELECT pg_notify($4, q.queue)
          FROM (SELECT queue FROM rescued WHERE status = 'pending'
                UNION
                SELECT unnest(woken) FROM stepped) q) n
)
SELECT rescued.id FROM rescued CROSS JOIN notified
