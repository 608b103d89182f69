-- Removes a job for good. $1 id.
DELETE FROM {schema}.jobs WHERE id = $1
