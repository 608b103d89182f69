-- Completes jobs. ARGV[4..]: id, token, mark of the token, result per job. Returns a digit per
-- job, 1 (accepted) or 0. The lease fields are emptied in the same HSET rather than deleted by
-- another command, but `l` keeps the mark of the completing lease (16 base64 digits of the
-- token, which the caller computes: see leases.rs): a completion repeated under that lease (the
-- first one applied, its reply was lost) is accepted again and changes nothing. A workflow
-- step's completion applies its `on_complete` effects (see effects.lua); a repeat does not.
local ids = {}

-- Whether job `id` was completed under the lease whose mark is `mark`.
local function completed_under(id, mark)
  local v = redis.call('HMGET', job_key(id), 's', 'l')
  return v[1] == 'c' and v[2] == mark
end

local out = each_leased(4, 4, function(i, id, key, u, _, k, wf)
  local lease, result = ARGV[i + 2], ARGV[i + 3]
  if #result > LONG then
    redis.call('SET', side_key('r', id), result)
    redis.call('HSET', key, 's', 'c', 'f', NOW_S, 'w', '', 'l', lease)
  else
    redis.call('HSET', key, 's', 'c', 'res', result, 'f', NOW_S, 'w', '', 'l', lease)
  end
  release_unique(u, id)
  stop_running(k)
  if wf then
    apply_effects(wf, 'on_complete', result)
  end
  ids[#ids + 1] = id
  return true
end)
for n = 1, #out do
  local i = 4 + 4 * (n - 1)
  if out[n] == '0' and completed_under(ARGV[i], ARGV[i + 2]) then
    out[n] = '1'
  end
end
if #ids > 0 then
  zrem_all(RUNNING, ids)
  forget_reserved(ids)
  -- One member for the call's jobs, which all finished now (see head.lua).
  redis.call('ZADD', DONE, NOW_S, table.concat(ids))
  recount_by('r', -#ids)
  recount_by('c', #ids)
end
return finish(table.concat(out))
