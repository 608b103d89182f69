-- Delayed jobs becoming ready (fetch, peek).

-- Moves delayed jobs whose run_at has come into the ready set (at most `limit`): scheduled
-- jobs become pending, so every job in the ready set is pending. Returns how many it moved: the
-- caller wakes the queue's workers when some of them stay in the ready set.
local function promote(limit)
  local due = redis.call('ZRANGEBYSCORE', DELAYED, '-inf', NOW_S, 'LIMIT', 0, limit)
  if #due == 0 then
    return 0
  end
  for _, id in ipairs(due) do
    local key = job_key(id)
    local v = redis.call('HMGET', key, 'pr', 'ra', 's', 'k')
    if v[1] then
      redis.call('ZADD', ready_of(v[4]), v[1], ready_member(v[2], id))
      if v[3] == 's' then
        redis.call('HSET', key, 's', 'p')
        recount('s', 'p')
      end
    end
  end
  zrem_all(DELAYED, due)
  return #due
end
