-- Puts dead or cancelled job ARGV[4] back to pending with fresh attempts. Returns 1, 0 when the
-- job is missing or neither dead nor cancelled, or {holder id, unique key} when an active job
-- holds its unique key.
local id = ARGV[4]
local key = job_key(id)
local v = redis.call('HMGET', key, 's', 'u', 'pr')
local from = v[1]
if from ~= 'd' and from ~= 'x' then
  return 0
end
if v[2] then
  local holder = redis.call('HGET', UNIQUE, v[2])
  if holder then
    return { holder, v[2] }
  end
  redis.call('HSET', UNIQUE, v[2], id)
end
redis.call('HSET', key, 's', 'p', 'a', 0, 'ra', NOW_S)
redis.call('HDEL', key, 'f', 'w', 'l')
redis.call('ZREM', DONE, id)
redis.call('ZREM', DEAD, id)
recount(from, 'p')
redis.call('ZADD', READY, v[3], ready_member(NOW_S, id))
wake()
return finish(1)
