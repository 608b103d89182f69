-- Rescues up to ARGV[4] running jobs whose lease expired before now, recording for the attempt
-- the error report ARGV[5] (JSON, written by jobs-core): pending again at their own run_at, so
-- they keep their place among the ready jobs, or dead when no attempt is left. Returns their
-- ids.
local expired = redis.call('ZRANGEBYSCORE', RUNNING, '-inf', '(' .. NOW_S, 'LIMIT', 0, tonumber(ARGV[4]))
local woken = false
for _, id in ipairs(expired) do
  local key = job_key(id)
  local v = redis.call('HMGET', key, 'a', 'm', 'ra')
  if v[1] then
    local retry_at = nil
    -- The max attempts lead the `m` field.
    if tonumber(v[1]) < tonumber(string.match(v[2], '^%d+')) then
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
