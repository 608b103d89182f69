-- Lists worker $1 as holding its liveness (once its lock is held).
INSERT INTO {schema}.liveness (worker) VALUES ($1)
ON CONFLICT (worker) DO NOTHING
