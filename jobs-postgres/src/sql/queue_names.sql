-- Every queue that holds jobs or that jobs were deleted from, sorted bytewise. The queues of
-- the jobs table are read without scanning it: a skip scan (one index probe per queue) through
-- each partial index that leads with the queue (ready, workflow steps waiting, finished and
-- dead jobs), plus the running jobs, few, through the lease index.
WITH RECURSIVE waiting(queue) AS (
    (SELECT queue FROM {schema}.jobs
     WHERE status IN ('pending', 'scheduled') ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT j.queue FROM {schema}.jobs j
            WHERE j.status IN ('pending', 'scheduled') AND j.queue > w.queue
            ORDER BY j.queue LIMIT 1)
    FROM waiting w
    WHERE w.queue IS NOT NULL
),
finished(queue) AS (
    (SELECT queue FROM {schema}.jobs
     WHERE status IN ('completed', 'cancelled') ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT j.queue FROM {schema}.jobs j
            WHERE j.status IN ('completed', 'cancelled') AND j.queue > f.queue
            ORDER BY j.queue LIMIT 1)
    FROM finished f
    WHERE f.queue IS NOT NULL
),
steps(queue) AS (
    (SELECT queue FROM {schema}.jobs WHERE status = 'waiting' ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT j.queue FROM {schema}.jobs j
            WHERE j.status = 'waiting' AND j.queue > s.queue
            ORDER BY j.queue LIMIT 1)
    FROM steps s
    WHERE s.queue IS NOT NULL
),
dead(queue) AS (
    (SELECT queue FROM {schema}.jobs WHERE status = 'dead' ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT j.queue FROM {schema}.jobs j
            WHERE j.status = 'dead' AND j.queue > d.queue
            ORDER BY j.queue LIMIT 1)
    FROM dead d
    WHERE d.queue IS NOT NULL
),
named(queue) AS (
    SELECT queue FROM waiting
    UNION SELECT queue FROM finished
    UNION SELECT queue FROM steps
    UNION SELECT queue FROM dead
    UNION SELECT queue FROM {schema}.jobs WHERE lease_expires_at IS NOT NULL
    UNION SELECT name FROM {schema}.queues
)
SELECT queue
FROM named
WHERE queue IS NOT NULL
ORDER BY queue COLLATE "C"
