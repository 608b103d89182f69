-- Places: a worker's promoted jobs (reserved leases handed the place of an ended job, see
-- 0017) are counted against their queue's concurrency as one number per worker and queue, in
-- `flow_places`, in place of a write to each job (`promote_leases` rewrote every promoted row:
-- a second non-HOT update of each, as costly as its completion). A worker sets its number
-- (`places.sql`) before it writes the outcome of an ended job that handed its place on, and
-- lowers it once its promoted jobs end; a rescue of a gone worker's jobs drops its rows.
--
-- Every running count of a queue's concurrency now adds the places of the queue: the three
-- limited fetches below are those of 0010, 0011 and 0016 with that one term added (and JIT off,
-- as 0016 set it). Reserved rows stay uncounted (`flow_counted` false) while they run, promoted
-- or not. `promote_leases` stays, for the workers of the release before: a row it marks counts
-- as it did.
CREATE TABLE flow_places (
    queue  text    NOT NULL,
    worker text    NOT NULL,
    places integer NOT NULL CHECK (places >= 1),
    PRIMARY KEY (queue, worker)
);

CREATE OR REPLACE FUNCTION fetch_unkeyed_one(
    text, timestamptz, int8, text, timestamptz, text[], int4[],
    int4, int4, int8, text, uuid[], uuid[]
)
RETURNS SETOF jobs
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
SET jit = off
AS $$
DECLARE
    room int8 := $3;
    total int8;
    last_prune timestamptz;
    due boolean := false;
    gone int8 := 0;
    leased int8 := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext($11 || ':flow'), hashtext($1));

    IF $8 IS NOT NULL THEN
        SELECT LEAST(room, $8 - count(*)
                           - (SELECT COALESCE(sum(p.places), 0) FROM flow_places p
                              WHERE p.queue = $1))
        INTO room
        FROM jobs k
        WHERE k.queue = $1 AND k.lease_expires_at IS NOT NULL AND k.flow_counted
          AND NOT EXISTS (SELECT 1 FROM unnest($12, $13) AS e(id, token)
                          WHERE e.id = k.id AND e.token = k.lease_token);
    END IF;

    IF $9 IS NOT NULL THEN
        SELECT t.n, t.pruned_at INTO total, last_prune FROM flow_started t WHERE t.queue = $1;
        due := last_prune IS NULL
               OR last_prune <= $2 - $10 * interval '1 millisecond' / 8
               OR $9 - total < $3;
        IF due THEN
            WITH pruned AS (
                DELETE FROM flow_starts s
                WHERE s.queue = $1 AND s.key IS NULL
                  AND s.at <= $2 - $10 * interval '1 millisecond'
                RETURNING s.n
            )
            SELECT COALESCE(sum(p.n), 0) INTO gone FROM pruned p;
        END IF;
        room := LEAST(room, $9 - COALESCE(total, 0) + gone);
    END IF;

    IF room > 0 THEN
        RETURN QUERY
        UPDATE jobs j
        SET status = 'running', attempt = j.attempt + 1, started_at = $2, lease_worker = $4,
            lease_token = gen_random_uuid(), lease_expires_at = $5,
            flow_counted = $8 IS NOT NULL
        WHERE j.id = ANY (ARRAY(
            SELECT r.id
            FROM jobs r
            WHERE r.queue = $1
              AND r.status IN ('pending', 'scheduled')
              AND r.run_at <= $2
              AND ($6 IS NULL OR r.version <= $7[array_position($6, r.name)])
              AND r.key_limits IS NULL
            ORDER BY r.priority, r.run_at, r.id
            LIMIT room
            FOR UPDATE SKIP LOCKED
        ))
        RETURNING j.*;
        GET DIAGNOSTICS leased = ROW_COUNT;
    END IF;

    IF $9 IS NOT NULL THEN
        IF leased > 0 THEN
            INSERT INTO flow_starts (queue, key, at, until, n)
            VALUES ($1, NULL, $2, $2 + $10 * interval '1 millisecond', leased);
        END IF;
        IF leased > 0 OR due THEN
            INSERT INTO flow_started AS t (queue, n, pruned_at)
            VALUES ($1, leased - gone, CASE WHEN due THEN $2 END)
            ON CONFLICT (queue) DO UPDATE
            SET n = t.n + EXCLUDED.n, pruned_at = COALESCE(EXCLUDED.pruned_at, t.pruned_at);
        END IF;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION fetch_unkeyed(
    text[], timestamptz, int8, text, timestamptz, text[],
    int4[], int4[], int8[], bool[], text, int4[], uuid[], uuid[]
)
RETURNS SETOF jobs
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan
SET enable_bitmapscan = off
SET jit = off
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext($11 || ':flow'), hashtext(c.queue))
    FROM (SELECT u.queue
          FROM unnest($1, $10) AS u(queue, checked)
          WHERE u.checked
          ORDER BY u.queue) c;

    RETURN QUERY
    WITH q AS (
        SELECT q.*, t.n AS total,
               q.rate_limit IS NOT NULL
               AND (t.pruned_at IS NULL
                    OR t.pruned_at <= $2 - q.period_ms * interval '1 millisecond' / 8
                    OR q.rate_limit - t.n < $3) AS prune
        FROM unnest($1, $7, $8, $9) AS q(queue, concurrency, rate_limit, period_ms)
        LEFT JOIN flow_started t ON t.queue = q.queue
    ),
    -- The queue's starts that left its window stop counting, when its log is due a prune.
    -- (A queue with keyed jobs has key rows as well, which `fetch_limited` prunes: this fetch
    -- never counts them.)
    pruned AS (
        DELETE FROM flow_starts s
        USING q
        WHERE s.queue = q.queue AND q.prune
          AND s.key IS NULL AND s.at <= $2 - q.period_ms * interval '1 millisecond'
        RETURNING s.queue, s.n
    ),
    -- Each queue's room is taken in run order, skipping the rows another fetch holds; the
    -- best $3 of all queues are leased, found by primary key.
    leased AS (
        UPDATE jobs j
        SET status = 'running', attempt = j.attempt + 1, started_at = $2, lease_worker = $4,
            lease_token = gen_random_uuid(), lease_expires_at = $5,
            flow_counted = (SELECT q.concurrency IS NOT NULL FROM q WHERE q.queue = j.queue)
        WHERE j.id = ANY (ARRAY(
            SELECT c.id
            FROM q
            CROSS JOIN LATERAL (
                SELECT r.id, r.priority, r.run_at
                FROM jobs r
                WHERE r.queue = q.queue
                  AND r.status IN ('pending', 'scheduled')
                  AND r.run_at <= $2
                  AND ($6 IS NULL OR r.version <= $12[array_position($6, r.name)])
                  AND r.key_limits IS NULL
                ORDER BY r.priority, r.run_at, r.id
                LIMIT GREATEST(LEAST(
                    $3,
                    CASE WHEN q.concurrency IS NOT NULL THEN q.concurrency - (
                        SELECT count(*)
                        FROM jobs k
                        WHERE k.queue = q.queue AND k.lease_expires_at IS NOT NULL
                          AND k.flow_counted
                          AND NOT EXISTS (SELECT 1 FROM unnest($13, $14) AS e(id, token)
                                          WHERE e.id = k.id AND e.token = k.lease_token))
                        - (SELECT COALESCE(sum(p.places), 0) FROM flow_places p
                           WHERE p.queue = q.queue)
                    END,
                    CASE WHEN q.rate_limit IS NOT NULL THEN q.rate_limit - COALESCE(q.total, 0)
                        + COALESCE((SELECT sum(p.n) FROM pruned p WHERE p.queue = q.queue), 0)
                    END
                ), 0)
                FOR UPDATE SKIP LOCKED
            ) c
            ORDER BY c.priority, c.run_at, c.id
            LIMIT $3
        ))
        RETURNING j.*
    ),
    -- The starts that rates count, logged, and each rated queue's running total less what
    -- left its window, with when its log was pruned.
    started AS (
        SELECT q.queue, q.period_ms, q.prune, count(l.id) AS n,
               COALESCE((SELECT sum(p.n) FROM pruned p WHERE p.queue = q.queue), 0) AS gone
        FROM q LEFT JOIN leased l ON l.queue = q.queue
        WHERE q.rate_limit IS NOT NULL
        GROUP BY q.queue, q.period_ms, q.prune
    ),
    logged AS (
        INSERT INTO flow_starts (queue, key, at, until, n)
        SELECT s.queue, NULL, $2, $2 + s.period_ms * interval '1 millisecond', s.n
        FROM started s
        WHERE s.n > 0
    ),
    totals AS (
        INSERT INTO flow_started AS t (queue, n, pruned_at)
        SELECT s.queue, s.n - s.gone, CASE WHEN s.prune THEN $2 END
        FROM started s
        WHERE s.n > 0 OR s.prune
        ON CONFLICT (queue) DO UPDATE
        SET n = t.n + EXCLUDED.n, pruned_at = COALESCE(EXCLUDED.pruned_at, t.pruned_at)
    )
    SELECT * FROM leased;
END
$$;

CREATE OR REPLACE FUNCTION fetch_limited(
    text[], timestamptz, int8, text, timestamptz, text[],
    int4[], int4[], int8[], bool[], bool[], int8, text, int4[], uuid[], uuid[]
)
RETURNS SETOF jobs
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan
SET enable_bitmapscan = off
SET jit = off
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
            - (SELECT COALESCE(sum(p.places), 0) FROM flow_places p WHERE p.queue = q.queue)
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
