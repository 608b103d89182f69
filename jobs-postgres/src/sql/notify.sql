-- Sends each of the messages $2 on channel $1 (queue names, to wake their workers, or batches of
-- job events), in a transaction of its own that commits
-- without waiting for the WAL flush: a notification is not stored, so a crash loses nothing
-- a flush would have kept, and the commit holds Postgres' notification lock only briefly.
SELECT count(pg_notify($1, q.queue))
FROM unnest($2::text[]) AS q(queue)
WHERE (SELECT set_config('synchronous_commit', 'off', true) IS NOT NULL)
