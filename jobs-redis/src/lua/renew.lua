-- Extends live leases to ARGV[4]. ARGV[5..]: id, token per job. A lease that already lapsed is
-- not renewed. Returns 1 (renewed) or 0 per job.
local out = {}
for i = 5, #ARGV, 2 do
  local id = ARGV[i]
  local token = ARGV[i + 1]
  local key, _, expiry = leased(id, token)
  if key and tonumber(expiry) >= NOW then
    redis.call('HSET', key, 'l', token .. ':' .. ARGV[4])
    redis.call('ZADD', RUNNING, ARGV[4], id)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
