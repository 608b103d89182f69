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
  local attempt = tonumber(v[1])
  if attempt then
    redis.call('HSET', key, 's', 'p', 'a', int(math.max(attempt - 1, 0)), 'ra', run_at)
  else
    -- An `a` that is not a number stays as it is: the next fetch fails the job as corrupt.
    redis.call('HSET', key, 's', 'p', 'ra', run_at)
  end
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
