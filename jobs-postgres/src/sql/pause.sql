-- Pauses queue $1 when $2, else resumes it.
WITH resumed AS (
    DELETE FROM {schema}.paused_queues WHERE queue = $1 AND NOT $2
)
INSERT INTO {schema}.paused_queues (queue)
SELECT $1 WHERE $2
ON CONFLICT (queue) DO NOTHING
