-- Completes jobs. ARGV[4..]: id, token, result per job. Returns 1 (accepted) or 0 per job.
-- The lease fields are emptied in the same HSET rather than deleted by another command.
local ids, done = {}, {}
local out = each_leased(4, 3, function(i, id, key, u)
  local result = ARGV[i + 2]
  if #result > LONG then
    redis.call('SET', side_key('r', id), result)
    redis.call('HSET', key, 's', 'c', 'f', NOW_S, 'w', '', 'l', '')
  else
    redis.call('HSET', key, 's', 'c', 'res', result, 'f', NOW_S, 'w', '', 'l', '')
  end
  release_unique(u, id)
  ids[#ids + 1] = id
  done[#done + 1] = NOW_S
  done[#done + 1] = id
  return true
end)
if #ids > 0 then
  zrem_all(RUNNING, ids)
  bulk('ZADD', DONE, done, 1000)
  recount_by('r', -#ids)
  recount_by('c', #ids)
end
return finish(out)
