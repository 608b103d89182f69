-- Forgets a worker that stopped. $1 id.
DELETE FROM {schema}.workers WHERE id = $1
