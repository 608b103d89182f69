-- A page of jobs, oldest first. $1 queue or NULL, $2 status or NULL, $3 after id or NULL,
-- $4 limit.
SELECT {record}
FROM {schema}.jobs j
WHERE ($1::text IS NULL OR j.queue = $1)
  AND ($2::text IS NULL OR j.status = $2)
  AND ($3::uuid IS NULL OR j.id > $3)
ORDER BY j.id
LIMIT $4
