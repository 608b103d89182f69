-- Serializes the limited fetches of the queues $2 (sorted, distinct) across every process:
-- a transaction-level advisory lock per queue, keyed (hashtext of `<schema>:flow`, hashtext of
-- the queue), taken in order. The counting statement that follows, in the same transaction,
-- takes its snapshot after the locks, so it sees every lease the previous holder committed.
-- $1 the schema's name.
SELECT count(pg_advisory_xact_lock(hashtext($1 || ':flow'), hashtext(q.queue)))
FROM (SELECT queue FROM unnest($2::text[]) AS u(queue) ORDER BY queue) q
