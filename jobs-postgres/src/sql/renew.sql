-- Extends leases that are still held and have not lapsed. $1 ids, $2 tokens, $3 expiry, $4 now.
-- The expiry test is written `(…) IS TRUE` so that it does not imply the predicate of
-- `jobs_leased`: this statement goes by primary key, not through a lease index that holds every
-- recently leased job until a vacuum.
UPDATE {schema}.jobs j
SET lease_expires_at = $3
FROM unnest($1::uuid[], $2::uuid[]) AS r(id, token)
WHERE j.id = r.id
  AND j.lease_token = r.token
  AND j.status = 'running'
  AND (j.lease_expires_at >= $4) IS TRUE
RETURNING j.id
