-- Sets the places under queue $1's concurrency limit that worker $2's promoted jobs hold to $3
-- (0: none), in place of what it held before (migration 0018).
WITH given_up AS (
    DELETE FROM {schema}.flow_places
    WHERE queue = $1 AND worker = $2 AND $3::int4 = 0
)
INSERT INTO {schema}.flow_places AS p (queue, worker, places)
SELECT $1, $2, $3::int4
WHERE $3::int4 > 0
ON CONFLICT (queue, worker) DO UPDATE SET places = EXCLUDED.places
