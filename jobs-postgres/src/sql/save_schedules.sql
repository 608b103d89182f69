-- Records cron schedules, replacing those of the same names, seen at $5. The caller sends each
-- name once, sorted, so that workers saving the same schedules at once lock their rows in one
-- order. $1 names, $2 queues, $3 expressions, $4 time zones.
INSERT INTO {schema}.schedules AS s (name, queue, expression, timezone, seen_at)
SELECT i.name, i.queue, i.expression, i.timezone, $5
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS i(name, queue, expression, timezone)
ON CONFLICT (name) DO UPDATE
SET queue = EXCLUDED.queue,
    expression = EXCLUDED.expression,
    timezone = EXCLUDED.timezone,
    seen_at = EXCLUDED.seen_at
