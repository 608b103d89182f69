-- Sets the places under the queue's concurrency that worker ARGV[5]'s promoted jobs hold to
-- ARGV[4], in place of what it held before (see `queue_room` in flow.lua); ARGV[4] = 0 drops
-- the places of every worker named in ARGV[5..].
if ARGV[4] == '0' then
  redis.call('HDEL', PLACES, unpack(ARGV, 5))
else
  redis.call('HSET', PLACES, ARGV[5], ARGV[4])
end
return 1
