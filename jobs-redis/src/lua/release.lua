-- Hands leased jobs back to pending without counting their attempt. ARGV[4..]: id, token and
-- the new run_at ('' to keep the job's own, and so its place in the queue) per job.
-- Returns a digit per job, 1 (accepted) or 0.
local woken = false
local out = each_leased(4, 3, function(i, id, key, _, _, k)
  clear_lease(key, id, k)
  local v = redis.call('HMGET', key, 'a', 'pr', 'ra')
  local run_at = ARGV[i + 2]
  if run_at == '' then
    run_at = v[3]
  end
  redis.call('HSET', key, 's', 'p', 'a', int(math.max(tonumber(v[1]) - 1, 0)), 'ra', run_at)
  recount('r', 'p')
  if tonumber(run_at) <= NOW then
    redis.call('ZADD', ready_of(k), v[2], ready_member(run_at, id))
    woken = true
  else
    redis.call('ZADD', DELAYED, run_at, id)
  end
  return true
end)
if woken then
  wake()
end
return finish(table.concat(out))
