-- The limited fetch of 0008, remade in smaller statements, which now leaves out of its running
-- counts the fetching worker's leases whose attempts have ended (`FetchParams::ended`).
-- Everything else is as 0006 and 0008 describe. The signature of 0008 stays, for the workers
-- of the release before during a rolling deploy: it calls this one with no ended leases, which
-- counts every running job, as they expect.
--
-- Ended leases: $15 their job ids and $16 their lease tokens, in the same order. A row is left
-- out only while it is still leased under that very token, so a job leased again by another
-- worker still counts, and a completion written meanwhile changes nothing (a completed row is
-- not counted either way). The handlers of those jobs have ended, so at most the limit still
-- runs, and the worker need not wait for their completions to be written before it leases its
-- next jobs.
--
-- Smaller statements: a fetch prunes the logs of starts only when a checked queue has a rate
-- or holds keyed jobs, leases with the statement that handles key limits only when a checked
-- queue holds keyed jobs (a plain lease of each queue's room otherwise), and logs its starts
-- only when it counts any. PL/pgSQL keeps each statement's plan, but the executor sets it up
-- again on every call, and the keyed statement's is large: a fetch of queues with a
-- concurrency limit alone now costs about as much as a plain fetch, plus the count.
--
-- The running counts skip the dead entries of `jobs_flow_running`: each job that ends leaves
-- one in that partial index until a vacuum, thousands while a queue drains fast, and a count
-- that visits the heap behind every one of them costs more than the rest of the fetch. A plain
-- index scan marks the entries it finds dead, so that the next scans skip them, but a bitmap
-- scan never does (bitmap scans are off in the function), nor can a scan mark one TID of a
-- posting list: an unkeyed queue's entries all share one key, `(queue, NULL)`, so btree
-- deduplication merged them into posting lists mixing the running and the ended. The index
-- keeps one entry per row from now on; the posting lists stored before go as vacuum empties
-- them.
ALTER INDEX jobs_flow_running SET (deduplicate_items = off);

CREATE FUNCTION fetch_limited(
    text[], timestamptz, int8, text, timestamptz, text[],
    int4[], int4[], int8[], bool[], bool[], int8, text, int4[], uuid[], uuid[]
)
RETURNS SETOF jobs
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan
SET enable_bitmapscan = off
AS $$
DECLARE
    keyed bool := true = ANY ($10);
    -- Whether the fetch keeps logs of starts: a checked queue has a rate (the others' are
    -- NULL), or holds keyed jobs, whose keys may have rates.
    logged bool := keyed OR array_remove($8, NULL) <> '{}';
    rooms int8[];
    taken jobs[];
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext($13 || ':flow'), hashtext(c.queue))
    FROM (SELECT u.queue
          FROM unnest($1, $11) AS u(queue, checked)
          WHERE u.checked
          ORDER BY u.queue) c;

    -- The starts that left their windows stop counting.
    IF logged THEN
        WITH q AS (
            SELECT * FROM unnest($1, $9, $11) AS q(queue, period_ms, checked)
        ),
        pruned AS (
            DELETE FROM flow_starts s
            USING q
            WHERE s.queue = q.queue AND q.checked
              AND (s.until <= $2
                   OR (s.key IS NULL AND s.at <= $2 - q.period_ms * interval '1 millisecond'))
            RETURNING s.queue, s.key, s.n
        ),
        gone AS (
            SELECT p.queue, sum(p.n) AS n FROM pruned p WHERE p.key IS NULL GROUP BY p.queue
        )
        UPDATE flow_started t SET n = t.n - gone.n FROM gone WHERE t.queue = gone.queue;
    END IF;

    SELECT array_agg(GREATEST(LEAST(
        $3,
        CASE WHEN q.concurrency IS NOT NULL THEN q.concurrency - (
            SELECT count(*)
            FROM jobs r
            WHERE r.queue = q.queue AND r.lease_expires_at IS NOT NULL AND r.flow_counted
              AND NOT EXISTS (SELECT 1 FROM unnest($15, $16) AS e(id, token)
                              WHERE e.id = r.id AND e.token = r.lease_token))
        END,
        CASE WHEN q.rate_limit IS NOT NULL THEN q.rate_limit
            - COALESCE((SELECT t.n FROM flow_started t WHERE t.queue = q.queue), 0)
        END
    ), 0) ORDER BY q.ord)
    INTO rooms
    FROM unnest($1, $7, $8) WITH ORDINALITY AS q(queue, concurrency, rate_limit, ord);

    IF NOT 0 < ANY (rooms) THEN
        RETURN;
    END IF;

    IF keyed THEN
        WITH q AS (
            SELECT *
            FROM unnest($1, $8, $9, $10, rooms) AS q(queue, rate_limit, period_ms, keyed, room)
        ),
        unkeyed AS (
            SELECT c.*
            FROM q
            CROSS JOIN LATERAL (
                SELECT r.id, r.queue, r.priority, r.run_at
                FROM jobs r
                WHERE r.queue = q.queue
                  AND r.status IN ('pending', 'scheduled')
                  AND r.run_at <= $2
                  AND ($6 IS NULL OR r.version <= $14[array_position($6, r.name)])
                  AND r.key_limits IS NULL
                ORDER BY r.priority, r.run_at, r.id
                LIMIT q.room
                FOR UPDATE SKIP LOCKED
            ) c
            WHERE NOT q.keyed AND q.room > 0
        ),
        candidates AS (
            SELECT c.*,
                   row_number() OVER (PARTITION BY c.queue, c.key
                                      ORDER BY c.priority, c.run_at, c.id) AS nth
            FROM q
            CROSS JOIN LATERAL (
                SELECT r.id, r.queue, r.priority, r.run_at,
                       r.key_limits ->> 'key' AS key,
                       (r.key_limits ->> 'concurrency')::int8 AS key_concurrency,
                       (r.key_limits -> 'rate' ->> 'limit')::int8 AS key_rate,
                       (r.key_limits -> 'rate' ->> 'period')::int8 AS key_period_ms
                FROM jobs r
                WHERE r.queue = q.queue
                  AND r.status IN ('pending', 'scheduled')
                  AND r.run_at <= $2
                  AND ($6 IS NULL OR r.version <= $14[array_position($6, r.name)])
                ORDER BY r.priority, r.run_at, r.id
                LIMIT q.room + $12
            ) c
            WHERE q.keyed AND q.room > 0
        ),
        key_running AS (
            SELECT k.queue, k.key, (
                SELECT count(*)
                FROM jobs r
                WHERE r.queue = k.queue AND (r.key_limits ->> 'key') = k.key
                  AND r.lease_expires_at IS NOT NULL AND r.flow_counted
                  AND NOT EXISTS (SELECT 1 FROM unnest($15, $16) AS e(id, token)
                                  WHERE e.id = r.id AND e.token = r.lease_token)) AS running
            FROM (SELECT DISTINCT queue, key FROM candidates WHERE key_concurrency IS NOT NULL) k
        ),
        key_started AS (
            SELECT k.queue, k.key, k.key_period_ms, (
                SELECT COALESCE(sum(s.n), 0)
                FROM flow_starts s
                WHERE s.queue = k.queue AND s.key = k.key
                  AND s.at > $2 - k.key_period_ms * interval '1 millisecond') AS started
            FROM (SELECT DISTINCT queue, key, key_period_ms
                  FROM candidates WHERE key_rate IS NOT NULL) k
        ),
        allowed AS (
            SELECT c.id, c.queue, c.priority, c.run_at,
                   row_number() OVER (PARTITION BY c.queue
                                      ORDER BY c.priority, c.run_at, c.id) AS place
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
                  FROM allowed a JOIN q ON q.queue = a.queue
                  WHERE a.place <= q.room
                  UNION ALL
                  SELECT u.id, u.priority, u.run_at FROM unkeyed u) t
            ORDER BY t.priority, t.run_at, t.id
            LIMIT $3
        ),
        leased AS (
            UPDATE jobs j
            SET status = 'running', attempt = j.attempt + 1, started_at = $2, lease_worker = $4,
                lease_token = gen_random_uuid(), lease_expires_at = $5, flow_counted = true
            FROM picked
            WHERE j.id = picked.id
              AND j.status IN ('pending', 'scheduled')
              AND j.run_at <= $2
            RETURNING j
        )
        SELECT array_agg(l.j ORDER BY (l.j).priority, (l.j).run_at, (l.j).id) INTO taken
        FROM leased l;
    ELSE
        -- No checked queue holds keyed jobs: each queue's room, in order.
        WITH q AS (
            SELECT * FROM unnest($1, rooms) AS q(queue, room)
        ),
        picked AS (
            SELECT c.id
            FROM q
            CROSS JOIN LATERAL (
                SELECT r.id, r.priority, r.run_at
                FROM jobs r
                WHERE r.queue = q.queue
                  AND r.status IN ('pending', 'scheduled')
                  AND r.run_at <= $2
                  AND ($6 IS NULL OR r.version <= $14[array_position($6, r.name)])
                  AND r.key_limits IS NULL
                ORDER BY r.priority, r.run_at, r.id
                LIMIT q.room
                FOR UPDATE SKIP LOCKED
            ) c
            WHERE q.room > 0
            ORDER BY c.priority, c.run_at, c.id
            LIMIT $3
        ),
        leased AS (
            UPDATE jobs j
            SET status = 'running', attempt = j.attempt + 1, started_at = $2, lease_worker = $4,
                lease_token = gen_random_uuid(), lease_expires_at = $5, flow_counted = true
            FROM picked
            WHERE j.id = picked.id
            RETURNING j
        )
        SELECT array_agg(l.j ORDER BY (l.j).priority, (l.j).run_at, (l.j).id) INTO taken
        FROM leased l;
    END IF;

    -- The starts that rates count: each rated queue's, and each rated key's.
    IF logged AND taken IS NOT NULL THEN
        WITH leased AS (
            SELECT * FROM unnest(taken)
        ),
        q AS (
            SELECT * FROM unnest($1, $8, $9) AS q(queue, rate_limit, period_ms)
        ),
        started AS (
            SELECT l.queue, q.period_ms, count(*) AS n
            FROM leased l JOIN q ON q.queue = l.queue
            WHERE q.rate_limit IS NOT NULL
            GROUP BY l.queue, q.period_ms
        ),
        logged AS (
            INSERT INTO flow_starts (queue, key, at, until, n)
            SELECT s.queue, NULL, $2, $2 + s.period_ms * interval '1 millisecond', s.n
            FROM started s
            UNION ALL
            SELECT l.queue, l.key_limits ->> 'key', $2,
                   $2 + max((l.key_limits -> 'rate' ->> 'period')::int8)
                        * interval '1 millisecond',
                   count(*)
            FROM leased l
            WHERE (l.key_limits -> 'rate' ->> 'period') IS NOT NULL
            GROUP BY l.queue, l.key_limits ->> 'key'
        )
        INSERT INTO flow_started AS t (queue, n)
        SELECT s.queue, s.n FROM started s
        ON CONFLICT (queue) DO UPDATE SET n = t.n + EXCLUDED.n;
    END IF;

    RETURN QUERY SELECT * FROM unnest(taken);
END
$$;

-- The signature of 0008, for the workers of the release before.
CREATE OR REPLACE FUNCTION fetch_limited(
    text[], timestamptz, int8, text, timestamptz, text[],
    int4[], int4[], int8[], bool[], bool[], int8, text, int4[]
)
RETURNS SETOF jobs
LANGUAGE sql
VOLATILE
SET search_path FROM CURRENT
AS $$
    SELECT * FROM fetch_limited($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
                                '{}'::uuid[], '{}'::uuid[])
$$;
