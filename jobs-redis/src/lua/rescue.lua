-- Rescues up to ARGV[4] running jobs whose lease expired before now: pending again at once, or
-- dead when no attempt is left. Returns their ids.
local expired = redis.call('ZRANGEBYSCORE', RUNNING, '-inf', '(' .. NOW_S, 'LIMIT', 0, tonumber(ARGV[4]))
local woken = false
for _, id in ipairs(expired) do
  local key = job_key(id)
  local v = redis.call('HMGET', key, 'a', 'm')
  if v[1] then
    local message = 'lease expired during attempt ' .. v[1]
      .. ': the worker stopped renewing it (it crashed, was killed or stalled)'
    local retry_at = nil
    -- The max attempts lead the `m` field.
    if tonumber(v[1]) < tonumber(string.match(v[2], '^%d+')) then
      retry_at = NOW_S
    end
    woken = finish_attempt(key, id, message, retry_at) or woken
  else
    redis.call('ZREM', RUNNING, id)
  end
end
if woken then
  wake()
end
return finish(expired)
