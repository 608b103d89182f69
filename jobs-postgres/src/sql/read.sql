-- One job by id. $1 id.
SELECT {record}
FROM {schema}.jobs j
WHERE j.id = $1
