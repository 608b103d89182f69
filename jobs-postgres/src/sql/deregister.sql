-- Forgets a worker that stopped or is gone, its liveness, its places under limits and its
-- offers. $1 id.
WITH unlisted AS (
    DELETE FROM {schema}.liveness WHERE worker = $1
),
unplaced AS (
    DELETE FROM {schema}.flow_places WHERE worker = $1
),
unoffered AS (
    DELETE FROM {schema}.offers WHERE worker = $1
)
DELETE FROM {schema}.workers WHERE id = $1
