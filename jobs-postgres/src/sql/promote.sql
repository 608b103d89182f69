-- Counts reserved leases against their queue's concurrency from now on, while their jobs still
-- run under them: the schema's `promote_leases` function (migration 0017). $1 ids, $2 tokens.
-- Returns the ids of the leases that still hold.
SELECT id
FROM {schema}.promote_leases($1::uuid[], $2::uuid[]) AS r(id)
