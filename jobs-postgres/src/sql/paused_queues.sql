-- The paused queues, sorted.
SELECT queue FROM {schema}.paused_queues ORDER BY queue
