-- Hands leased jobs back to pending without counting their attempt.
-- ARGV[4..]: id, token per job. Returns 1 (accepted) or 0 per job.
local woken = false
local out = each_leased(4, 2, function(_, id, key)
  clear_lease(key, id)
  local v = redis.call('HMGET', key, 'a', 'pr', 'ra')
  redis.call('HSET', key, 's', 'p', 'a', int(math.max(tonumber(v[1]) - 1, 0)))
  recount('r', 'p')
  redis.call('ZADD', READY, v[2], ready_member(v[3], id))
  woken = true
  return true
end)
if woken then
  wake()
end
return finish(out)
