-- Retries, in one statement, the dead or cancelled jobs among up to $1 jobs selected in id order
-- (NULL: every selected job) by the conditions spliced in for {selection}, which bind $4
-- onwards: given ids, or a filter after a cursor (see `select.rs`). Each goes back to pending,
-- due at $2, with fresh attempts and its error history kept, and wakes listeners on channel $3;
-- a workflow step whose inputs have not all arrived (fewer keys in `inputs` than its step's
-- `slots`) goes back to waiting instead, and wakes no one, until its last slot is filled.
-- A job whose unique key is held by an active job of its queue, or by an earlier job of this
-- batch that this statement retries, is left alone and reported with that holder. A concurrent
-- enqueue that takes a key after this statement's snapshot makes it fail on the unique index
-- (the caller runs it again, and the new snapshot sees that holder). The cancelled jobs
-- retried are taken off their queues' counts in `finished_counts` and off their minutes'
-- buckets in `finished_minutes`.
WITH picked AS (
    SELECT j.id, j.queue, j.unique_key, j.status, j.finished_at
    FROM {schema}.jobs j
    WHERE {selection}
    ORDER BY j.id
    LIMIT $1
    FOR UPDATE
),
retryable AS (
    SELECT p.id, p.queue, p.unique_key, p.status, p.finished_at,
           (SELECT h.id
            FROM {schema}.jobs h
            WHERE h.queue = p.queue
              AND h.unique_key = p.unique_key
              AND h.status IN ('waiting', 'scheduled', 'pending', 'running')
            LIMIT 1) AS active,
           first_value(p.id) OVER (PARTITION BY p.queue, p.unique_key ORDER BY p.id) AS first
    FROM picked p
    WHERE p.status IN ('dead', 'cancelled')
),
decided AS (
    SELECT id, queue, unique_key, status, finished_at,
           CASE WHEN unique_key IS NOT NULL THEN COALESCE(active, NULLIF(first, id)) END AS holder
    FROM retryable
),
retried AS (
    UPDATE {schema}.jobs j
    SET status = CASE WHEN (SELECT count(*) FROM jsonb_object_keys(COALESCE(j.inputs, '{}')))
                           < (j.step ->> 'slots')::int8 THEN 'waiting'
                      ELSE 'pending' END,
        attempt = 0,
        run_at = $2,
        finished_at = NULL,
        lease_worker = NULL,
        lease_token = NULL,
        lease_expires_at = NULL
    FROM decided d
    WHERE j.id = d.id AND d.holder IS NULL
    RETURNING j.id, j.queue, j.status, d.status AS was, d.finished_at AS finished
),
counted AS (
    INSERT INTO {schema}.finished_counts (queue, status, n)
    SELECT queue, 'cancelled', -count(*) FROM retried WHERE was = 'cancelled' GROUP BY queue
),
binned AS (
    INSERT INTO {schema}.finished_minutes (queue, minute, n)
    SELECT queue, date_bin('1 minute', finished, timestamptz 'epoch'), -count(*)
    FROM retried
    WHERE was = 'cancelled' AND finished IS NOT NULL
    GROUP BY 1, 2
),
notified AS (
    SELECT count(pg_notify($3, q.queue)) AS queues
    FROM (SELECT DISTINCT queue FROM retried WHERE status = 'pending') q
)
SELECT ARRAY(SELECT id FROM retried ORDER BY id) AS changed,
       ARRAY(SELECT id FROM decided WHERE holder IS NOT NULL ORDER BY id) AS held,
       ARRAY(SELECT unique_key FROM decided WHERE holder IS NOT NULL ORDER BY id) AS held_keys,
       ARRAY(SELECT holder FROM decided WHERE holder IS NOT NULL ORDER BY id) AS holders,
       (SELECT count(*) FROM picked) AS examined,
       (SELECT id FROM picked ORDER BY id DESC LIMIT 1) AS last
FROM notified
