-- Rescues up to ARGV[4] running jobs whose lease expired before now, or (when ARGV[6..] name
-- gone workers) that those workers hold, whatever their leases, dropping the places their
-- promoted jobs held; it records for the attempt the error report ARGV[5] (JSON, written by
-- jobs-core): pending again at their own run_at, so they keep their place among the ready
-- jobs, or dead when no attempt is left. A gone worker's offer (see idle.lua) is withdrawn
-- first. Returns their ids.
local limit = tonumber(ARGV[4])
local expired
if #ARGV >= 6 then
  local gone = {}
  for i = 6, #ARGV do
    gone[ARGV[i]] = true
    redis.call('HDEL', PLACES, ARGV[i])
    -- No job goes to a gone worker any more, before its jobs are rescued.
    withdraw(ARGV[i])
  end
  expired = {}
  for _, id in ipairs(redis.call('ZRANGE', RUNNING, 0, -1)) do
    if #expired == limit then
      break
    end
    if gone[redis.call('HGET', job_key(id), 'w')] then
      expired[#expired + 1] = id
    end
  end
else
  expired = redis.call('ZRANGEBYSCORE', RUNNING, '-inf', '(' .. NOW_S, 'LIMIT', 0, limit)
end
local woken = false
for _, id in ipairs(expired) do
  local key = job_key(id)
  local v = redis.call('HMGET', key, 'a', 'm', 'ra')
  if v[1] then
    local retry_at = nil
    -- The max attempts lead the `m` field. A job whose `m` is malformed (which its fetch failed
    -- as dead, unless its worker was gone first) dies: it cannot be read to run again.
    -- So does one whose attempts `a` is not a number.
    local most, attempt = tonumber(string.match(v[2] or '', '^%d+')), tonumber(v[1])
    if most and attempt and attempt < most then
      retry_at = v[3]
    end
    woken = finish_attempt(key, id, ARGV[5], retry_at) or woken
  else
    redis.call('ZREM', RUNNING, id)
  end
end
if woken then
  wake()
end
return finish(expired)
