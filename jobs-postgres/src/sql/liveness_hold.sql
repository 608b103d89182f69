-- Takes worker $1's liveness lock for this session; false when another session holds it (the
-- worker's previous connection, not yet dropped by the server, or a hash collision).
SELECT pg_try_advisory_lock(hashtext('{schema}'), hashtext($1))
