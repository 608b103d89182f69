-- The workers whose heartbeat has not expired at $1, by id (bytewise).
SELECT id, host, pid, queues, concurrency, names, started_at, last_seen
FROM {schema}.workers
WHERE expires_at >= $1
ORDER BY id COLLATE "C"
