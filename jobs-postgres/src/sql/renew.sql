-- Extends leases that are still held and have not lapsed: the schema's `renew_leases` function
-- (migration 0015), whose plan goes by primary key whatever size `jobs` had when the session
-- made it. $1 ids, $2 tokens, $3 expiry, $4 now. Returns the ids of the leases renewed.
SELECT id
FROM {schema}.renew_leases($1::uuid[], $2::uuid[], $3::timestamptz, $4::timestamptz) AS r(id)
