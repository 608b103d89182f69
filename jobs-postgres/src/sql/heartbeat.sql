-- Records a worker's heartbeat: its row is upserted with last_seen = now, and the rows of
-- workers whose heartbeat expired are removed (skipping any another heartbeat holds), with
-- their places under limits (a live worker tells its own again after each heartbeat).
-- $1 id, $2 host, $3 pid, $4 queues, $5 concurrency, $6 job names, $7 started_at, $8 now,
-- $9 expires_at.
WITH forgotten AS (
    DELETE FROM {schema}.workers
    WHERE id IN (SELECT id FROM {schema}.workers
                 WHERE expires_at < $8 AND id <> $1
                 FOR UPDATE SKIP LOCKED)
    RETURNING id
),
unplaced AS (
    DELETE FROM {schema}.flow_places WHERE worker IN (SELECT id FROM forgotten)
)
INSERT INTO {schema}.workers AS w (id, host, pid, queues, concurrency, names, started_at,
                                   last_seen, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (id) DO UPDATE
SET host = EXCLUDED.host,
    pid = EXCLUDED.pid,
    queues = EXCLUDED.queues,
    concurrency = EXCLUDED.concurrency,
    names = EXCLUDED.names,
    started_at = EXCLUDED.started_at,
    last_seen = EXCLUDED.last_seen,
    expires_at = EXCLUDED.expires_at
