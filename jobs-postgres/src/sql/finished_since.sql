-- How many jobs of queue $1 finished (completed or cancelled) at or after $2: a range of the
-- retention index, read from its end.
SELECT count(*)
FROM {schema}.jobs
WHERE queue = $1 AND status IN ('completed', 'cancelled') AND finished_at >= $2
