-- The first statement of a guarded enqueue: locks, until the transaction ends, each bounded
-- queue among $2 (one with a max depth) and each coalesce key of the batch ($3 queues, $4
-- modes, $5 keys), so that the enqueues counting one queue's depth, or reading one key's
-- holder, take turns across every process. Transaction-level advisory locks keyed (hashtext of
-- `<schema>:depth`, hashtext of the queue) and (hashtext of `<schema>:coalesce`, hashtext of
-- queue, mode and key), taken in sorted order. Answers the bounded queues with their max
-- depths (one row of NULLs for none). $1 the schema's name.
WITH bounded AS (
    SELECT f.queue, f.max_depth
    FROM {schema}.queue_flow f
    WHERE f.queue = ANY ($2::text[]) AND f.max_depth IS NOT NULL
),
keys AS (
    SELECT hashtext($1 || ':depth') AS space, hashtext(b.queue) AS key
    FROM bounded b
    UNION
    SELECT hashtext($1 || ':coalesce'), hashtext(s.queue || ':' || s.mode || ':' || s.key)
    FROM unnest($3::text[], $4::text[], $5::text[]) AS s(queue, mode, key)
),
locked AS (
    SELECT count(pg_advisory_xact_lock(k.space, k.key)) AS n
    FROM (SELECT space, key FROM keys ORDER BY space, key) k
)
SELECT b.queue, b.max_depth
FROM locked
LEFT JOIN bounded b ON true
