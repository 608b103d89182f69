-- The recorded cron schedules by name (bytewise), each with the last tick stored for it.
SELECT s.name, s.queue, s.expression, s.timezone, s.seen_at, t.tick AS last_tick
FROM {schema}.schedules s
LEFT JOIN {schema}.cron_ticks t ON t.schedule = s.name
ORDER BY s.name COLLATE "C"
