-- Workflow steps. Applied like 0001.
--
-- A job can be a step of a workflow (`NewJob::step`): `step` holds its part (the workflow, its
-- place, how many inputs it waits for, and the effects of its end on the other steps, as
-- jobs-core's `Step` serializes it), NULL for an ordinary job; `inputs` the values delivered to
-- its slots so far, an object keyed by the slot's number as text, NULL until the first
-- delivery. Neither has a default, so adding them rewrites nothing, and the jobs stored before
-- read back as ordinary jobs.
ALTER TABLE jobs ADD COLUMN step jsonb;
ALTER TABLE jobs ADD COLUMN inputs jsonb;

-- A step with inputs to come is stored `waiting`: never fetched (it is in no index that the
-- fetches read), until the completions that fill its last slot make it pending.
ALTER TABLE jobs DROP CONSTRAINT jobs_status_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_status_check CHECK (status IN
    ('waiting', 'scheduled', 'pending', 'running', 'completed', 'dead', 'cancelled'));

-- A waiting job is active: it holds its unique key as the scheduled, pending and running ones do
-- (the arbiter of enqueue's ON CONFLICT names the same predicate).
DROP INDEX jobs_unique_key;
CREATE UNIQUE INDEX jobs_unique_key ON jobs (queue, unique_key)
    WHERE unique_key IS NOT NULL AND status IN ('waiting', 'scheduled', 'pending', 'running');

-- The waiting jobs of a queue: what counting a queue's waiting jobs, and naming the queues that
-- hold jobs, read, as `jobs_dead` serves the dead ones.
CREATE INDEX jobs_waiting ON jobs (queue, id)
    WHERE status = 'waiting';
