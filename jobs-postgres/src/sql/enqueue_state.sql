-- The second statement of a guarded enqueue, after enqueue_lock.sql: what the batch's jobs
-- meet, read with a snapshot that sees every enqueue that held the locks before. One row per
-- finding, `kind` saying which:
-- - `throttle`: the job holding throttle key $1[ord] ($1 queues, $2 modes, $3 keys) while its
--   window lasts (past $4, now);
-- - `debounce`: the job holding debounce key ord, if it still waits; it is locked, so no fetch
--   takes it before this transaction ends;
-- - `unique`: the active job holding unique key ord ($5 queues, $6 keys);
-- - `depth`: the waiting (pending and scheduled) jobs `n` of bounded queue $7[ord].
WITH slots AS (
    SELECT *
    FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS s(queue, mode, key, ord)
),
throttled AS (
    SELECT s.ord, c.job
    FROM slots s
    JOIN {schema}.coalesce_keys c ON c.queue = s.queue AND c.mode = s.mode AND c.key = s.key
    WHERE s.mode = 'throttle' AND c.until > $4
),
debounced AS (
    SELECT s.ord, j.id
    FROM slots s
    JOIN {schema}.coalesce_keys c ON c.queue = s.queue AND c.mode = s.mode AND c.key = s.key
    JOIN {schema}.jobs j ON j.id = c.job
    WHERE s.mode = 'debounce' AND j.status IN ('pending', 'scheduled')
    FOR UPDATE OF j
),
uniques AS (
    SELECT u.ord, held.id
    FROM unnest($5::text[], $6::text[]) WITH ORDINALITY AS u(queue, key, ord)
    JOIN {schema}.jobs held
      ON held.queue = u.queue
     AND held.unique_key = u.key
     AND held.status IN ('waiting', 'scheduled', 'pending', 'running')
),
depths AS (
    SELECT b.ord, (SELECT count(*)
                   FROM {schema}.jobs r
                   WHERE r.queue = b.queue AND r.status IN ('pending', 'scheduled')) AS n
    FROM unnest($7::text[]) WITH ORDINALITY AS b(queue, ord)
)
SELECT 'throttle' AS kind, ord, job AS id, NULL::int8 AS n FROM throttled
UNION ALL
SELECT 'debounce', ord, id, NULL FROM debounced
UNION ALL
SELECT 'unique', ord, id, NULL FROM uniques
UNION ALL
SELECT 'depth', ord, NULL, n FROM depths
