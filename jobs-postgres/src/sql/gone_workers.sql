-- The listed workers whose liveness lock no session holds: each lock is tried for this
-- statement only (a transaction lock, let go when it ends), which succeeds only once the
-- worker's own session is gone.
SELECT worker
FROM {schema}.liveness
WHERE pg_try_advisory_xact_lock(hashtext('{schema}'), hashtext(worker))
ORDER BY worker
