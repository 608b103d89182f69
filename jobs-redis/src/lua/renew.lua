-- Extends live leases to ARGV[4]. ARGV[5..]: id, token per job. A lease that already lapsed is
-- not renewed; a reserved one stays reserved (see flow.lua). Returns a digit per job, 1
-- (renewed) or 0.
local out = each_leased(5, 2, function(i, id, key, _, expiry)
  if tonumber(expiry) < NOW then
    return false
  end
  redis.call('HSET', key, 'l', ARGV[i + 1] .. ':' .. ARGV[4])
  redis.call('ZADD', RUNNING, ARGV[4], id)
  redis.call('ZADD', RESERVED, 'XX', ARGV[4], id)
  return true
end)
return table.concat(out)
