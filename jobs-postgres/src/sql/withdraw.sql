-- Withdraws worker $1's offers; given its delivery channel $2, then notifies there the mark
-- `{"w": worker}` that ends its deliveries. The DELETE waits for any enqueue delivering under
-- an offer to commit, and notifications go out in commit order, so the mark comes after every
-- delivery made.
WITH withdrawn AS (
    DELETE FROM {schema}.offers WHERE worker = $1
)
SELECT pg_notify($2, json_build_object('w', $1)::text)
WHERE $2::text IS NOT NULL
