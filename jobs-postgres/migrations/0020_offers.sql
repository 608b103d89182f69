-- Offers: an idle worker's fetch of one queue that found nothing offers the places its handlers
-- have idle, and an enqueue of one ready job takes a place to lease the job straight to that
-- worker, notifying it on its backend instance's delivery channel in the same transaction: the
-- worker starts the job when the enqueue commits, without a fetch (whose commit waits on a WAL
-- flush) or a wake-up in between.
--
-- The table is unlogged: an offer writes no WAL, so an idle worker's fetch still commits without
-- waiting on a flush, and a crash or a failover to a standby empties it, which costs only the
-- deliveries (workers offer again at their next fetch that finds nothing).
--
-- `offer` names the offer, made anew when none stood; `delivered` counts its deliveries, which
-- are numbered from 1 in the order they were made and so heard. A fetch that finds nothing again
-- keeps the offer and recounts its places: the worker's idle places less the deliveries made
-- that it has not heard yet (it says how many of the offer's it heard), so that no place counts
-- twice. `at` is the worker's clock at its last fetch (a delivered lease runs from it at the
-- earliest); the offer lapses at `until`, a lease's length after it.
CREATE UNLOGGED TABLE offers (
    queue     text        NOT NULL,
    worker    text        NOT NULL,
    offer     uuid        NOT NULL,
    places    integer     NOT NULL CHECK (places >= 0),
    delivered integer     NOT NULL DEFAULT 0,
    names     text[],
    versions  int4[],
    lease_ms  bigint      NOT NULL,
    at        timestamptz NOT NULL,
    until     timestamptz NOT NULL,
    channel   text        NOT NULL,
    PRIMARY KEY (queue, worker)
);

CREATE INDEX offers_worker ON offers (worker);

-- Stores one job without a unique key, ready now, as sql/enqueue_one.sql does, unless an offer
-- takes it (sql/deliver_one.sql calls it; a producer calls it while it saw offers standing in
-- the job's queue, and the plain statement otherwise, which says whether it saw one: so an
-- enqueue pays for this function only while some worker of the queue is idle).
--
-- $17 is the job's record as JSON (given only for a job without key limits or a workflow step,
-- that its backend enqueues in a transaction of its own). The first standing offer of the queue
-- not locked by another enqueue, from a worker that runs the job's name at its version, takes
-- it when the queue is neither paused nor under a concurrency or rate limit and has no ready job
-- (which would run first): the job is stored running, its first attempt leased to the offer's
-- worker until a lease's length after the later of now and the offer's `at`, and `{"w": worker,
-- "q": queue, "i": id, "t": token, "x": lease expiry, "o": offer, "n": the delivery's number,
-- "r": record}` is notified on the offer's channel (unless that exceeds a notification's 8,000
-- bytes: then no offer takes it). Locking the offer's row with SKIP LOCKED, an enqueue never
-- waits on another: the one that finds every offer locked stores its job ready, as without
-- offers. The worker's next fetch, and a stopping worker's withdrawal, wait on that lock, so a
-- withdrawal's end mark is notified after every delivery (notifications go out in commit order).
--
-- $1 id, $2 name, $3 queue, $4 payload, $5 priority, $6 run_at, $7 status, $8 max_attempts,
-- $9 backoff, $10 timeout (ms), $11 trace context, $12 tags, $13 now, $14 channel or NULL (no
-- wake-up), $15 payload version, $16 workflow step (JSON or NULL), $17 the record. Answers 2
-- when an offer took the job, 1 when it was stored ready while an offer in time with places
-- stood in the queue, 0 when it was stored ready and none stood, or NULL when the queue has a
-- max depth: nothing was stored, and the caller takes the guarded path, which counts the depth
-- under a lock.
CREATE FUNCTION deliver_one(
    uuid, text, text, text, int2, timestamptz, text, int4, text, int8, text, text[],
    timestamptz, text, int4, text, text
)
RETURNS int2
LANGUAGE plpgsql
VOLATILE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    o offers;
    token uuid;
    expires timestamptz;
    message text;
    stood int2 := 0;
BEGIN
    IF EXISTS (SELECT FROM queue_flow f WHERE f.queue = $3 AND f.max_depth IS NOT NULL) THEN
        RETURN NULL;
    END IF;
    IF EXISTS (SELECT FROM offers x WHERE x.queue = $3 AND x.places > 0 AND x.until > $13) THEN
        stood := 1;
        SELECT * INTO o
        FROM offers x
        WHERE x.queue = $3 AND x.places > 0 AND x.until > $13
          AND (x.names IS NULL OR $15 <= x.versions[array_position(x.names, $2)])
        ORDER BY x.at
        LIMIT 1
        FOR UPDATE SKIP LOCKED;
        IF FOUND
           AND NOT EXISTS (SELECT FROM paused_queues p WHERE p.queue = $3)
           AND NOT EXISTS (SELECT FROM queue_flow f
                           WHERE f.queue = $3
                             AND (f.concurrency IS NOT NULL OR f.rate_limit IS NOT NULL))
           AND NOT EXISTS (SELECT FROM jobs r
                           WHERE r.queue = $3 AND r.status IN ('pending', 'scheduled')
                             AND r.run_at <= $13)
        THEN
            token := gen_random_uuid();
            expires := GREATEST($13, o.at) + o.lease_ms * interval '1 millisecond';
            message := json_build_object('w', o.worker, 'q', $3, 'i', $1, 't', token,
                                         'x', expires, 'o', o.offer, 'n', o.delivered + 1,
                                         'r', $17::json);
            IF octet_length(message) < 8000 THEN
                UPDATE offers x
                SET places = x.places - 1, delivered = x.delivered + 1
                WHERE x.queue = o.queue AND x.worker = o.worker;
                INSERT INTO jobs (id, name, queue, payload, version, priority, run_at, status,
                                  attempt, max_attempts, backoff, timeout_ms, trace_context, tags,
                                  step, created_at, started_at, lease_worker, lease_token,
                                  lease_expires_at)
                VALUES ($1, $2, $3, $4::json, $15, $5, $6, 'running', 1, $8, $9::jsonb, $10, $11,
                        $12, $16::jsonb, $13, $13, o.worker, token, expires);
                PERFORM pg_notify(o.channel, message);
                RETURN 2;
            END IF;
        END IF;
    END IF;
    INSERT INTO jobs (id, name, queue, payload, version, priority, run_at, status, max_attempts,
                      backoff, timeout_ms, trace_context, tags, step, created_at)
    VALUES ($1, $2, $3, $4::json, $15, $5, $6, $7, $8, $9::jsonb, $10, $11, $12, $16::jsonb,
            $13);
    IF $14 IS NOT NULL THEN
        PERFORM pg_notify($14, $3);
    END IF;
    RETURN stood;
END
$$;
