-- Deletes, in one statement, up to $1 jobs selected in id order (NULL: every selected job) by
-- the conditions spliced in for {selection}, which bind $2 onwards (see `select.rs`), whatever
-- their status. Their queues are remembered, so that a queue emptied so is still named, and the
-- completed and cancelled jobs deleted are taken off their counts in `finished_counts` and off
-- their minutes' buckets in `finished_minutes`.
WITH picked AS (
    SELECT j.id
    FROM {schema}.jobs j
    WHERE {selection}
    ORDER BY j.id
    LIMIT $1
    FOR UPDATE
),
deleted AS (
    DELETE FROM {schema}.jobs j
    USING picked p
    WHERE j.id = p.id
    RETURNING j.id, j.queue, j.status, j.finished_at
),
counted AS (
    INSERT INTO {schema}.finished_counts (queue, status, n)
    SELECT queue, status, -count(*)
    FROM deleted
    WHERE status IN ('completed', 'cancelled')
    GROUP BY queue, status
),
binned AS (
    INSERT INTO {schema}.finished_minutes (queue, minute, n)
    SELECT queue, date_bin('1 minute', finished_at, timestamptz 'epoch'), -count(*)
    FROM deleted
    WHERE status IN ('completed', 'cancelled') AND finished_at IS NOT NULL
    GROUP BY 1, 2
),
remembered AS (
    INSERT INTO {schema}.queues (name)
    SELECT DISTINCT queue FROM deleted
    ON CONFLICT DO NOTHING
)
SELECT ARRAY(SELECT id FROM deleted ORDER BY id) AS changed,
       '{}'::uuid[] AS held,
       '{}'::text[] AS held_keys,
       '{}'::uuid[] AS holders,
       (SELECT count(*) FROM picked) AS examined,
       (SELECT id FROM picked ORDER BY id DESC LIMIT 1) AS last
