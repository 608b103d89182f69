-- The renewal of leases (sql/renew.sql) as a function, for the reason of 0012: a worker renews
-- all its leases in one statement every few seconds, and a plan made while `jobs` was small
-- scanned the whole table on each renewal once it had grown (a session keeps a statement's
-- generic plan until the table's statistics change). Sequential scans are off inside, so the
-- plan goes by primary key whatever the table's size was when it was made.
--
-- The expiry test is written `(…) IS TRUE` so that it does not imply the predicate of
-- `jobs_leased`: the statement goes by primary key, not through a lease index that holds every
-- recently leased job until a vacuum. The body is sql/renew.sql of the release before, schema
-- unqualified; a later change is a later migration replacing this function.
-- $1 ids, $2 tokens, $3 expiry, $4 now; returns the ids of the leases renewed.
CREATE OR REPLACE FUNCTION renew_leases(uuid[], uuid[], timestamptz, timestamptz)
RETURNS SETOF uuid
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
BEGIN
    RETURN QUERY
    UPDATE jobs j
    SET lease_expires_at = $3
    FROM unnest($1, $2) AS r(id, token)
    WHERE j.id = r.id
      AND j.lease_token = r.token
      AND j.status = 'running'
      AND (j.lease_expires_at >= $4) IS TRUE
    RETURNING j.id;
END
$$;
