-- Sets the places under the queue's concurrency that worker ARGV[4]'s promoted jobs hold to
-- ARGV[5] (0: none), in place of what it held before (see `queue_room` in flow.lua).
if ARGV[5] == '0' then
  redis.call('HDEL', PLACES, ARGV[4])
else
  redis.call('HSET', PLACES, ARGV[4], ARGV[5])
end
return 1
