-- The limited fetch of one queue without keyed jobs (a worker of one queue with a global
-- concurrency, a rate, or both: the common limited fetch), as a function of short statements.
--
-- `fetch_unkeyed` (0011) does the same for any number of queues in one statement of seven
-- CTEs. For one queue most of that statement is machinery: PostgreSQL sets up and runs every
-- CTE on each call (a data-modifying CTE runs whether or not its rows are needed), and it
-- plans the queue array as ten rows, so the generic plan's cost is ten times the running
-- count's. Measured with pgbench (one session, 16 jobs leased and rolled back, alternated):
-- the plain one-queue fetch 0.68–0.82 ms; `fetch_unkeyed` with a rate 1.02–1.26 ms, with a
-- concurrency 1.08–1.10 ms; this function with a rate 0.84–0.86 ms, with a concurrency
-- 0.74–0.76 ms. Its statements run only when the queue's limits need them: the running count
-- for a concurrency, the total (and, when due, the prune of the log) and the logging for a
-- rate.
--
-- It takes the advisory lock of `fetch_unkeyed` and `fetch_limited` (hashtext of
-- `<schema>:flow`, hashtext of the queue) in a statement of its own, so all three take turns
-- on a queue across every process, each statement after it seeing what the previous holder
-- committed; and it keeps the rate's bookkeeping as `fetch_unkeyed` does (0011 says how): the
-- log is pruned when the rate could hold this fetch back or an eighth of the period after the
-- last prune, the starts are logged per fetch, and the running total is kept in
-- `flow_started`. Only a concurrency marks the leases counted (`flow_counted`).
--
-- Sequential and bitmap scans are off, as in the other fetch functions (see 0012 and 0014),
-- and so is JIT: a plan whose estimate crosses `jit_above_cost` (a count over a table whose
-- statistics are stale, say) would compile its expressions on every call, about 100 ms here,
-- for a statement that runs in one.
--
-- $1 queue, $2 now, $3 limit, $4 worker, $5 lease expiry, $6 the names the worker runs (NULL:
-- every name) and $7 the newest version it runs of each; $8 concurrency, $9 rate limit, $10
-- rate period (ms), each NULL for none; $11 the schema's name; $12 the ids and $13 the lease
-- tokens of the worker's ended leases, which the running count leaves out (see 0010).
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
        SELECT LEAST(room, $8 - count(*))
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

-- JIT off in the other functions of the hot path, for the same reason.
ALTER FUNCTION fetch_unkeyed(text[], timestamptz, int8, text, timestamptz, text[], int4[],
                             int4[], int8[], bool[], text, int4[], uuid[], uuid[])
    SET jit = off;
ALTER FUNCTION fetch_limited(text[], timestamptz, int8, text, timestamptz, text[], int4[],
                             int4[], int8[], bool[], bool[], int8, text, int4[], uuid[], uuid[])
    SET jit = off;
ALTER FUNCTION fetch_ready(text[], timestamptz, int8, text, timestamptz, text[], int4[])
    SET jit = off;
ALTER FUNCTION complete_jobs(uuid[], uuid[], text[], timestamptz, boolean, text) SET jit = off;
ALTER FUNCTION renew_leases(uuid[], uuid[], timestamptz, timestamptz) SET jit = off;
