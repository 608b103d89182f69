-- The number of completed and cancelled jobs of each queue, the two statuses that grow without
-- bound as finished jobs are retained, so that counting a queue reads a few rows here instead
-- of every finished row of `jobs`. Applied like 0001.
--
-- The rows are deltas, and a count is the sum of its queue's and status's rows. Every statement
-- that makes a job completed or cancelled, or takes one out of those statuses (retry, delete,
-- prune), adds one row per (queue, status) it changed, in the same statement; no trigger, so the
-- statements that cannot change these statuses (enqueue, fetch, fail, renew, …) pay nothing.
-- A writer only appends, so concurrent writers never wait on each other (a counter updated in
-- place would be locked until its writer commits). Prune folds a queue's rows into one per
-- status, in one statement, so that every snapshot still sums to the exact count. A TRUNCATE
-- of `jobs` bypasses the statements: its trigger below empties this table with it.
CREATE TABLE finished_counts (
    queue  text   NOT NULL,
    status text   NOT NULL CHECK (status IN ('completed', 'cancelled')),
    n      bigint NOT NULL
);

CREATE INDEX finished_counts_queue ON finished_counts (queue);

-- No write to `jobs` may fall between the count of the rows it holds and the statements that
-- count what follows: the lock (held until this migration commits) waits for the writers in
-- flight and holds back new ones; reads go on. A process of an earlier release, whose
-- statements add no deltas, must not run beside this one: the jobs it finished would go
-- uncounted (and be subtracted when pruned). Upgrade to this release with the older workers
-- stopped, or repair the counts afterwards with `PgBackend::recount` (`jobs migrate --recount`).
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;

INSERT INTO finished_counts (queue, status, n)
SELECT queue, status, count(*)
FROM jobs
WHERE status IN ('completed', 'cancelled')
GROUP BY queue, status;

-- A truncated table has no jobs to count. Fires on TRUNCATE only, so no write to a row pays
-- for it.
CREATE FUNCTION finished_counts_clear()
RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    DELETE FROM finished_counts;
    RETURN NULL;
END
$$;

CREATE TRIGGER finished_counts_truncate
    AFTER TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION finished_counts_clear();
