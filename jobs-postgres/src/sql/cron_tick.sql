-- Claims one tick of a schedule: true when it is later than the last one claimed. Concurrent
-- claims of the same tick serialize on the row; only the first one sees its update applied.
-- $1 schedule, $2 tick.
INSERT INTO {schema}.cron_ticks AS t (schedule, tick)
VALUES ($1, $2)
ON CONFLICT (schedule) DO UPDATE SET tick = EXCLUDED.tick
    WHERE t.tick < EXCLUDED.tick
RETURNING true
