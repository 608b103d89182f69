-- Reserved leases: a worker whose jobs fill a queue's concurrency limit leases jobs beyond it
-- (its prefetch), which no limit counts until an ended job of the worker hands one its place
-- (see jobs-core's `worker::handoff`).
--
-- `fetch_unkeyed_one` gains a last argument, $14: how many leases it may reserve beyond the
-- limit. It leases within the limits as the 13-argument function does (which it calls, under
-- the same advisory lock), then, when the queue has a concurrency and no rate, reserves up to
-- $14 plus the jobs it just leased, and $3 in all: the next ready jobs, leased as any other but
-- with `flow_counted` false, so that no running count sees them. The 13-argument function stays
-- for the workers of the release before.
--
-- `promote_leases` counts reserved leases from then on (`flow_counted` true) while their jobs
-- still run under them. A worker promotes the job it started in an ended job's place before it
-- writes that ended job's outcome, so a running count sees one of the two at every moment.
-- Both plans go by primary key or by the ready index whatever size `jobs` had when the session
-- made them (sequential and bitmap scans off, as in the other hot functions), and neither is
-- ever JIT compiled.
--
-- $1 queue, $2 now, $3 limit, $4 worker, $5 lease expiry, $6 the names the worker runs (NULL:
-- every name) and $7 the newest version it runs of each; $8 concurrency, $9 rate limit, $10 rate
-- period (ms), each NULL for none; $11 the schema's name; $12 the ids and $13 the lease tokens
-- of the worker's ended leases; $14 how many leases it may reserve.
CREATE OR REPLACE FUNCTION fetch_unkeyed_one(
    text, timestamptz, int8, text, timestamptz, text[], int4[],
    int4, int4, int8, text, uuid[], uuid[], int8
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
    counted int8 := 0;
BEGIN
    RETURN QUERY
    SELECT * FROM fetch_unkeyed_one($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13);
    GET DIAGNOSTICS counted = ROW_COUNT;
    IF $14 > 0 AND $8 IS NOT NULL AND $9 IS NULL AND counted < $3 THEN
        RETURN QUERY
        UPDATE jobs j
        SET status = 'running', attempt = j.attempt + 1, started_at = $2, lease_worker = $4,
            lease_token = gen_random_uuid(), lease_expires_at = $5, flow_counted = false
        WHERE j.id = ANY (ARRAY(
            SELECT r.id
            FROM jobs r
            WHERE r.queue = $1
              AND r.status IN ('pending', 'scheduled')
              AND r.run_at <= $2
              AND ($6 IS NULL OR r.version <= $7[array_position($6, r.name)])
              AND r.key_limits IS NULL
            ORDER BY r.priority, r.run_at, r.id
            LIMIT LEAST($3 - counted, $14 + counted)
            FOR UPDATE SKIP LOCKED
        ))
        RETURNING j.*;
    END IF;
END
$$;

-- $1 ids, $2 tokens (in id order, as every batch write under leases). Returns the ids of the
-- leases that still hold.
CREATE OR REPLACE FUNCTION promote_leases(uuid[], uuid[])
RETURNS SETOF uuid
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $$
BEGIN
    RETURN QUERY
    UPDATE jobs j
    SET flow_counted = true
    FROM unnest($1, $2) AS r(id, token)
    WHERE j.id = r.id
      AND j.lease_token = r.token
      AND j.lease_expires_at IS NOT NULL
    RETURNING j.id;
END
$$;
