-- Removes up to $4 finished (completed or cancelled) jobs of queue $1, oldest first: those
-- beyond the newest $2 (when $2 is not NULL) and those finished before $3 (when not NULL).
-- Both sets are prefixes of the finished index's order, so the delete walks it from the start.
-- The queue is remembered once anything is removed, so that it is still named when emptied.
-- Answers how many jobs it removed.
--
-- It also folds the queue's rows of `finished_counts` into one per status, with the removed
-- jobs taken off: the rows this statement sees are deleted and their sum, less the jobs pruned,
-- inserted in their place, so every snapshot sums to the exact count. A row a concurrent fold
-- deletes first is skipped here (its sum is that fold's to insert), and a row added after this
-- statement's snapshot stays for the next fold.
--
-- Likewise for the queue's buckets in `finished_minutes`, which are kept from its horizon on:
-- the first minute 25 hours before $5 (now), or the later one an earlier prune recorded. The
-- minutes before it are dropped, and the rows of each minute that has several, or that a
-- pruned job finished in, are replaced by their sum less the jobs pruned; a minute's single row
-- stays as it is otherwise, so a fold rewrites only the minutes written or pruned since the
-- last, and leaves one row per minute. The horizon recorded in
-- `finished_horizons` only moves forwards (`GREATEST` over the committed row, should a
-- concurrent prune with a later $5 commit first), and a count reaching back before it counts
-- the rows of `jobs` instead (see `finished_since.sql`).
WITH cutoff AS (
    SELECT finished_at, id
    FROM {schema}.jobs
    WHERE queue = $1 AND status IN ('completed', 'cancelled') AND $2::bigint IS NOT NULL
    ORDER BY finished_at DESC, id DESC
    OFFSET $2
    LIMIT 1
),
doomed AS (
    SELECT f.id
    FROM {schema}.jobs f
    WHERE f.queue = $1
      AND f.status IN ('completed', 'cancelled')
      AND (f.finished_at < $3 OR (f.finished_at, f.id) <= (SELECT finished_at, id FROM cutoff))
    ORDER BY f.finished_at, f.id
    LIMIT $4
    FOR UPDATE SKIP LOCKED
),
pruned AS (
    DELETE FROM {schema}.jobs j
    USING doomed
    WHERE j.id = doomed.id
    RETURNING j.id, j.status, j.finished_at
),
unfolded AS (
    DELETE FROM {schema}.finished_counts
    WHERE queue = $1
    RETURNING status, n
),
folded AS (
    INSERT INTO {schema}.finished_counts (queue, status, n)
    SELECT $1, status, sum(n)
    FROM (SELECT status, n FROM unfolded
          UNION ALL
          SELECT status, -count(*) FROM pruned GROUP BY status) t
    GROUP BY status
    HAVING sum(n) <> 0
),
horizon AS (
    SELECT GREATEST(
        date_bin('1 minute', $5::timestamptz, timestamptz 'epoch') - interval '25 hours',
        (SELECT minute FROM {schema}.finished_horizons WHERE queue = $1)
    ) AS minute
),
unbinned AS (
    DELETE FROM {schema}.finished_minutes
    WHERE queue = $1
      AND (minute < (SELECT minute FROM horizon)
           OR minute IN (SELECT minute
                         FROM {schema}.finished_minutes
                         WHERE queue = $1
                         GROUP BY minute
                         HAVING count(*) > 1)
           OR minute IN (SELECT date_bin('1 minute', finished_at, timestamptz 'epoch')
                         FROM pruned))
    RETURNING minute, n
),
binned AS (
    INSERT INTO {schema}.finished_minutes (queue, minute, n)
    SELECT $1, minute, sum(n)
    FROM (SELECT minute, n FROM unbinned
          UNION ALL
          SELECT date_bin('1 minute', finished_at, timestamptz 'epoch'), -count(*)
          FROM pruned
          WHERE finished_at IS NOT NULL
          GROUP BY 1) t
    WHERE minute >= (SELECT minute FROM horizon)
    GROUP BY minute
    HAVING sum(n) <> 0
),
bounded AS (
    INSERT INTO {schema}.finished_horizons (queue, minute)
    SELECT $1, minute FROM horizon
    ON CONFLICT (queue) DO UPDATE
    SET minute = GREATEST({schema}.finished_horizons.minute, EXCLUDED.minute)
),
remembered AS (
    INSERT INTO {schema}.queues (name)
    SELECT $1 WHERE EXISTS (SELECT 1 FROM pruned)
    ON CONFLICT DO NOTHING
)
SELECT count(*) FROM pruned
