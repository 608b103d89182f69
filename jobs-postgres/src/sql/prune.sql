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
    RETURNING j.id, j.status
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
remembered AS (
    INSERT INTO {schema}.queues (name)
    SELECT $1 WHERE EXISTS (SELECT 1 FROM pruned)
    ON CONFLICT DO NOTHING
)
SELECT count(*) FROM pruned
