-- Completes a batch; only rows still running under the presented token change.
-- $1 ids, $2 tokens, $3 results, $4 now, $5 relaxed: commit without waiting for the WAL flush,
-- $6 channel, or NULL to leave the wake-ups to the caller. Returns the id and token of each
-- accepted job; without a channel, also a row (NULL, NULL, queue) per queue that got a ready
-- step, for the caller to wake once the transaction has committed.
--
-- The statement is the schema's `complete_jobs` function (migration 0012, which says what it
-- does and why), so that its plan looks jobs up by key whatever size `jobs` had when the
-- session first planned it; since 0019 it applies the effects of workflow steps in a second
-- statement, only for a batch that completed steps (since 0021 through `apply_step_effects`,
-- which fail.sql and rescue.sql call too).
SELECT done_id, done_token, wake_queue
FROM {schema}.complete_jobs($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz, $5::boolean,
                            $6::text)
