-- Ends an idle worker's blocked read of `x` (see wait.lua), which leaves `xwaiting`. ARGV[4..]:
-- the lease's expiry, the worker, the call's id, then the first and last entry the read took
-- and how many, or nothing when it took none. With entries, writes the call's lease over them,
-- started now, as a fetch writes its own (see `record_lease`), whatever a write under it did
-- since the read: its jobs run already, and their counts move here once, so in either order;
-- the lease goes at once if none of them is pending any more. Without, drops the lease if it
-- still holds no entry. Returns how many entries the read took.
local expiry, worker, call, first, last, n = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]
local lease, member = call_lease(call), worker .. '|' .. call
redis.call('HDEL', XWAITING, member)
if not first then
  if redis.call('HGET', lease, 'f') == UNREAD_FIRST then
    redis.call('DEL', lease)
    redis.call('ZREM', XLEASES, member)
  end
  return 0
end
redis.call('HSET', lease, 'w', worker)
record_lease(lease, call, worker, expiry, XSTREAM, first, last, tonumber(n))
if #redis.call('XPENDING', XSTREAM, 'g', first, last, 1, worker) == 0 then
  redis.call('DEL', lease)
  redis.call('ZREM', XLEASES, member)
end
return finish(tonumber(n))
