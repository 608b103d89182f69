-- Offers worker $2's $3 idle places in queue $1 (see migration 0020), or, when its offer stands,
-- recounts them: $3 less the deliveries of the offer that the worker has not heard ($9 the
-- offer of the last delivery it heard, $10 how many of that offer's it heard). $4 the names the
-- worker runs (NULL: every job) and $5 the newest version of each, $6 the lease's length (ms),
-- $7 now, $8 the channel its deliveries go on. Waits for an enqueue delivering under the offer
-- to commit, so its delivery is counted. The worker's offers in other queues, made while it
-- fetched those, are withdrawn: its idle places stand in one queue at a time.
WITH elsewhere AS (
    DELETE FROM {schema}.offers WHERE worker = $2 AND queue <> $1
)
INSERT INTO {schema}.offers AS o (queue, worker, offer, places, names, versions, lease_ms, at,
                                  until, channel)
VALUES ($1, $2, gen_random_uuid(), $3, $4, $5, $6, $7, $7 + $6 * interval '1 millisecond', $8)
ON CONFLICT (queue, worker) DO UPDATE
SET places = GREATEST(EXCLUDED.places
                      - (o.delivered - CASE WHEN o.offer = $9::uuid THEN LEAST($10, o.delivered)
                                         ELSE 0 END), 0),
    names = EXCLUDED.names,
    versions = EXCLUDED.versions,
    lease_ms = EXCLUDED.lease_ms,
    at = EXCLUDED.at,
    until = EXCLUDED.until,
    channel = EXCLUDED.channel
