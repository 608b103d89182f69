-- The descriptions (JSON) of the workers whose heartbeats expire at or after now.
local live = redis.call('ZRANGEBYSCORE', WORKERS, NOW_S, '+inf')
return bulk('HMGET', INFO, live, 500)
