-- Records a worker's heartbeat, and forgets the workers whose heartbeats expired before now.
-- ARGV[4] the worker's id, ARGV[5] when it is forgotten unless it beats again (microseconds),
-- ARGV[6] its description (JSON). Returns the workers forgotten, whose places under limits the
-- caller drops in each queue's slot.
local gone = redis.call('ZRANGEBYSCORE', WORKERS, '-inf', '(' .. NOW_S)
if #gone > 0 then
  bulk('ZREM', WORKERS, gone, 500)
  bulk('HDEL', INFO, gone, 500)
end
redis.call('ZADD', WORKERS, ARGV[5], ARGV[4])
redis.call('HSET', INFO, ARGV[4], ARGV[6])
return gone
