-- Leases up to $3 ready jobs of the queues $1 within their limits, in one statement, after
-- fetch_lock.sql locked the checked ones in this transaction (so the counts below see every
-- lease of the fetches before). Per queue $7 concurrency, $8 rate limit, $9 rate period (ms),
-- $10 keyed, $11 checked (false: a queue of the same fetch without limits, read as the plain
-- fetch reads it). $2 now, $3 limit, $4 worker, $5 lease expiry, $6 the names the worker runs
-- (NULL: every name), $12 how many candidates a keyed queue's scan looks at beyond its room.
--
-- A queue's room is the least of the limit, its concurrency less its counted running jobs
-- (`jobs_flow_running`), and its rate less the starts of its log inside the window. A queue
-- without keyed jobs is read as the plain fetch reads it (its room, skipping locked rows). A
-- keyed queue's scan reads room + $12 candidates in run order (unlocked: concurrent lessees are
-- excluded by the lock, the rest by the UPDATE re-checking each row); a candidate with key
-- limits is taken when it is within them counting the earlier candidates of its key (its
-- key's counted running jobs plus its place among them within the concurrency, its key's
-- starts inside its rate's window plus its place within the rate), then the first `room`
-- taken of each queue, then the best $3 of all. The starts are logged per rated queue and key,
-- and the log rows of the checked queues that left every window go.
WITH q AS (
    SELECT *
    FROM unnest($1::text[], $7::int4[], $8::int4[], $9::int8[], $10::bool[], $11::bool[])
         AS q(queue, concurrency, rate_limit, period_ms, keyed, checked)
),
room AS (
    SELECT q.queue, q.keyed, GREATEST(LEAST(
        $3::int8,
        CASE WHEN q.concurrency IS NOT NULL THEN q.concurrency - (
            SELECT count(*)
            FROM {schema}.jobs r
            WHERE r.queue = q.queue AND r.lease_expires_at IS NOT NULL AND r.flow_counted)
        END,
        CASE WHEN q.rate_limit IS NOT NULL THEN q.rate_limit - (
            SELECT COALESCE(sum(s.n), 0)
            FROM {schema}.flow_starts s
            WHERE s.queue = q.queue AND s.key IS NULL
              AND s.at > $2 - q.period_ms * interval '1 millisecond')
        END
    ), 0) AS room
    FROM q
),
unkeyed AS (
    SELECT c.*
    FROM room
    CROSS JOIN LATERAL (
        SELECT r.id, r.queue, r.priority, r.run_at
        FROM {schema}.jobs r
        WHERE r.queue = room.queue
          AND r.status IN ('pending', 'scheduled')
          AND r.run_at <= $2
          AND ($6::text[] IS NULL OR r.name = ANY ($6))
          AND r.key_limits IS NULL
        ORDER BY r.priority, r.run_at, r.id
        LIMIT room.room
        FOR UPDATE SKIP LOCKED
    ) c
    WHERE NOT room.keyed AND room.room > 0
),
candidates AS (
    SELECT c.*,
           row_number() OVER (PARTITION BY c.queue, c.key
                              ORDER BY c.priority, c.run_at, c.id) AS nth
    FROM room
    CROSS JOIN LATERAL (
        SELECT r.id, r.queue, r.priority, r.run_at,
               r.key_limits ->> 'key' AS key,
               (r.key_limits ->> 'concurrency')::int8 AS key_concurrency,
               (r.key_limits -> 'rate' ->> 'limit')::int8 AS key_rate,
               (r.key_limits -> 'rate' ->> 'period')::int8 AS key_period_ms
        FROM {schema}.jobs r
        WHERE r.queue = room.queue
          AND r.status IN ('pending', 'scheduled')
          AND r.run_at <= $2
          AND ($6::text[] IS NULL OR r.name = ANY ($6))
        ORDER BY r.priority, r.run_at, r.id
        LIMIT room.room + $12
    ) c
    WHERE room.keyed AND room.room > 0
),
key_running AS (
    SELECT k.queue, k.key, (
        SELECT count(*)
        FROM {schema}.jobs r
        WHERE r.queue = k.queue AND (r.key_limits ->> 'key') = k.key
          AND r.lease_expires_at IS NOT NULL AND r.flow_counted) AS running
    FROM (SELECT DISTINCT queue, key FROM candidates WHERE key_concurrency IS NOT NULL) k
),
key_started AS (
    SELECT k.queue, k.key, k.key_period_ms, (
        SELECT COALESCE(sum(s.n), 0)
        FROM {schema}.flow_starts s
        WHERE s.queue = k.queue AND s.key = k.key
          AND s.at > $2 - k.key_period_ms * interval '1 millisecond') AS started
    FROM (SELECT DISTINCT queue, key, key_period_ms FROM candidates WHERE key_rate IS NOT NULL) k
),
allowed AS (
    SELECT c.id, c.queue, c.priority, c.run_at,
           row_number() OVER (PARTITION BY c.queue ORDER BY c.priority, c.run_at, c.id) AS place
    FROM candidates c
    LEFT JOIN key_running kr ON kr.queue = c.queue AND kr.key = c.key
    LEFT JOIN key_started ks
           ON ks.queue = c.queue AND ks.key = c.key AND ks.key_period_ms = c.key_period_ms
    WHERE c.key IS NULL
       OR ((c.key_concurrency IS NULL OR kr.running + c.nth <= c.key_concurrency)
           AND (c.key_rate IS NULL OR ks.started + c.nth <= c.key_rate))
),
picked AS (
    SELECT t.id
    FROM (SELECT a.id, a.priority, a.run_at
          FROM allowed a JOIN room ON room.queue = a.queue
          WHERE a.place <= room.room
          UNION ALL
          SELECT u.id, u.priority, u.run_at FROM unkeyed u) t
    ORDER BY t.priority, t.run_at, t.id
    LIMIT $3
),
leased AS (
    UPDATE {schema}.jobs j
    SET {lease}, flow_counted = true
    FROM picked
    WHERE j.id = picked.id
      AND j.status IN ('pending', 'scheduled')
      AND j.run_at <= $2
    RETURNING {record}, j.key_limits ->> 'key' AS flow_key,
              (j.key_limits -> 'rate' ->> 'period')::int8 AS flow_period_ms
),
logged AS (
    INSERT INTO {schema}.flow_starts (queue, key, at, until, n)
    SELECT l.queue, NULL, $2, $2 + q.period_ms * interval '1 millisecond', count(*)
    FROM leased l JOIN q ON q.queue = l.queue
    WHERE q.rate_limit IS NOT NULL
    GROUP BY l.queue, q.period_ms
    UNION ALL
    SELECT l.queue, l.flow_key, $2, $2 + max(l.flow_period_ms) * interval '1 millisecond',
           count(*)
    FROM leased l
    WHERE l.flow_period_ms IS NOT NULL
    GROUP BY l.queue, l.flow_key
),
pruned AS (
    DELETE FROM {schema}.flow_starts s
    USING q
    WHERE s.queue = q.queue AND q.checked AND s.until <= $2
)
SELECT * FROM leased
