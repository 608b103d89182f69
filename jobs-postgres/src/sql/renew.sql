-- Extends leases that are still held and have not lapsed. $1 ids, $2 tokens, $3 expiry, $4 now.
UPDATE {schema}.jobs j
SET lease_expires_at = $3
FROM unnest($1::uuid[], $2::uuid[]) AS r(id, token)
WHERE j.id = r.id
  AND j.lease_token = r.token
  AND j.status = 'running'
  AND j.lease_expires_at >= $4
RETURNING j.id
