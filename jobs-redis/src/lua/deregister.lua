-- Forgets worker ARGV[4], and its liveness.
redis.call('ZREM', WORKERS, ARGV[4])
redis.call('HDEL', INFO, ARGV[4])
redis.call('HDEL', LIVENESS, ARGV[4])
return 1
