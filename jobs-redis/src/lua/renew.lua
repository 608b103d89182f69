-- Extends live leases to ARGV[4]. ARGV[5..]: id, token per job. A lease that already lapsed is
-- not renewed. Returns 1 (renewed) or 0 per job.
local out = {}
for i = 5, #ARGV, 2 do
  local id = ARGV[i]
  local key = leased(id, ARGV[i + 1])
  if key and tonumber(redis.call('HGET', key, 'le')) >= NOW then
    redis.call('HSET', key, 'le', ARGV[4])
    redis.call('ZADD', RUNNING, ARGV[4], id)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
