-- The completed and cancelled jobs of each queue by the minute they finished in, so that
-- counting a queue's jobs finished since a time (its throughput) reads a row per minute here
-- instead of every finished row of `jobs`. Applied like 0001.
--
-- Kept like `finished_counts` (see 0005): the rows are deltas, a minute's count being the sum of
-- its queue's and minute's rows, and every statement that makes a job completed or cancelled, or
-- takes one out of those statuses (complete, cancel, retry, delete, prune), appends one row per
-- (queue, minute of the job's `finished_at`) it changed, in the same statement; a minute is
-- `date_bin('1 minute', finished_at, 'epoch')`, which no session's time zone moves (a finished
-- job without a finish time, which no statement writes, is in none). Prune folds
-- a queue's rows into one per minute and drops the minutes more than 25 hours before its `now`,
-- recording the first minute it kept in `finished_horizons`: a count reaching further back than
-- that counts the rows of `jobs` instead. A TRUNCATE of `jobs` empties both tables.
CREATE TABLE finished_minutes (
    queue  text        NOT NULL,
    minute timestamptz NOT NULL,
    n      bigint      NOT NULL
);

CREATE INDEX finished_minutes_queue_minute ON finished_minutes (queue, minute);

-- The first minute of each queue whose buckets are all kept; a queue not listed (never pruned
-- since its buckets were filled) has them all.
CREATE TABLE finished_horizons (
    queue  text        PRIMARY KEY,
    minute timestamptz NOT NULL
);

-- As in 0005: no write to `jobs` may fall between the count of its rows and the statements that
-- count what follows, and a process of an earlier release, whose statements add no rows here,
-- must not run beside this one (or the buckets are repaired afterwards with
-- `PgBackend::recount`).
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;

INSERT INTO finished_minutes (queue, minute, n)
SELECT queue, date_bin('1 minute', finished_at, timestamptz 'epoch'), count(*)
FROM jobs
WHERE status IN ('completed', 'cancelled') AND finished_at IS NOT NULL
GROUP BY 1, 2;

-- A truncated table has no jobs to count, nor buckets to keep. Fires on TRUNCATE only.
CREATE FUNCTION finished_minutes_clear()
RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    DELETE FROM finished_minutes;
    DELETE FROM finished_horizons;
    RETURN NULL;
END
$$;

CREATE TRIGGER finished_minutes_truncate
    AFTER TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION finished_minutes_clear();
