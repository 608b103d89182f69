-- Counts reserved leases against their queue's concurrency from now on (see flow.lua), while
-- their jobs still run under them. ARGV[4..]: id, token per lease. Returns 1 (still held) or 0
-- per lease.
return each_leased(4, 2, function(_, id)
  redis.call('ZREM', RESERVED, id)
  return true
end)
