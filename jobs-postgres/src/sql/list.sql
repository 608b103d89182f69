-- A page of the jobs matching a filter, in id order (oldest first). $1 limit; the conditions
-- spliced in for {selection} bind $2 onwards (see `select.rs`).
SELECT {record}
FROM {schema}.jobs j
WHERE {selection}
ORDER BY j.id
LIMIT $1
