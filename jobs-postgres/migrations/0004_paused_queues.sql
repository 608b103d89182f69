-- The paused queues: workers of every process read this table every half second and take no
-- job of a queue listed here, so a pause holds across restarts. Applied like 0001.
CREATE TABLE paused_queues (
    queue text        PRIMARY KEY,
    since timestamptz NOT NULL DEFAULT now()
);
