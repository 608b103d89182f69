-- Forgets a worker that stopped or is gone, and its liveness. $1 id.
WITH unlisted AS (
    DELETE FROM {schema}.liveness WHERE worker = $1
)
DELETE FROM {schema}.workers WHERE id = $1
