-- Withdraws the offers of the workers $1 (gone: before their jobs are rescued, in a statement of
-- its own, so that the rescue's snapshot sees every delivery made under them; the DELETE waits
-- for those under way) or heard on the channel $2 (whose listener was away, so that none takes
-- a job on a count that the deliveries lost meanwhile spoiled). Either may be NULL.
DELETE FROM {schema}.offers WHERE worker = ANY ($1) OR channel = $2
