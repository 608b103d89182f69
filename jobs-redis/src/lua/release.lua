-- Hands leased jobs back to pending without counting their attempt.
-- ARGV[4..]: id, token per job. Returns 1 (accepted) or 0 per job.
local out, woken = {}, false
for i = 4, #ARGV, 2 do
  local id = ARGV[i]
  local key = leased(id, ARGV[i + 1])
  if key then
    clear_lease(key, id)
    local v = redis.call('HMGET', key, 'a', 'pr', 'ra')
    redis.call('HSET', key, 's', 'p', 'a', int(math.max(tonumber(v[1]) - 1, 0)))
    recount('r', 'p')
    redis.call('ZADD', READY, v[2], ready_member(v[3], id))
    woken = true
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if woken then
  wake()
end
return finish(out)
