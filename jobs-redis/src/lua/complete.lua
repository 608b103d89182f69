-- Completes jobs. ARGV[4..]: id, token, result per job. Returns 1 (accepted) or 0 per job.
local out = {}
for i = 4, #ARGV, 3 do
  local id = ARGV[i]
  local key, u = leased(id, ARGV[i + 1])
  if key then
    local result = ARGV[i + 2]
    if #result > LONG then
      redis.call('SET', side_key('r', id), result)
      redis.call('HSET', key, 's', 'c', 'f', NOW_S)
    else
      redis.call('HSET', key, 's', 'c', 'res', result, 'f', NOW_S)
    end
    clear_lease(key, id)
    redis.call('ZADD', DONE, NOW_S, id)
    recount('r', 'c')
    release_unique(u, id)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return finish(out)
