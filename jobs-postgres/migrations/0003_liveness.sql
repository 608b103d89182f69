-- The workers that hold their liveness: each holds a session advisory lock, on a connection of
-- its own, keyed (hashtext of the schema's name, hashtext of its id). The lock vanishes with
-- the worker's process; a worker listed here whose lock no session holds is gone, and its jobs
-- are rescued at once. Applied like 0001.
CREATE TABLE liveness (
    worker text        PRIMARY KEY,
    since  timestamptz NOT NULL DEFAULT now()
);
