-- Cancels job ARGV[4] if it is scheduled, pending or running (revoking its lease).
-- Returns 1, or 0 when it is missing or already finished.
local id = ARGV[4]
local key = job_key(id)
local s = redis.call('HGET', key, 's')
if s ~= 's' and s ~= 'p' and s ~= 'r' then
  return 0
end
unindex(key, id, s)
redis.call('HDEL', key, 'w', 'l')
redis.call('HSET', key, 's', 'x', 'f', NOW_S)
redis.call('ZADD', DONE, NOW_S, id)
recount(nil, 'x')
return finish(1)
