-- Ends a fetch: the last command of its transaction (see fetch.lua). Names `x` back when
-- fetch.lua hid it. When fetch.lua left the read to the `XREADGROUP`, writes the call's lease
-- over what it read: as many entries as the worker's pending entries of `x` grew by (fetch.lua
-- counted them, `n`), from the first after `o` (the last delivered before) to the last
-- delivered now; or drops the lease when it read none. ARGV[4..]: lease expiry, worker, limit,
-- the call's id, and, when fetch.lua did not run (the library was missing, and loaded since),
-- the first entry the `XREADGROUP` read: the lease is then taken here, over the worker's
-- pending entries from that one. Returns how many entries the call leased through the
-- `XREADGROUP`.
local expiry, worker, limit, call, first = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
if redis.call('EXISTS', XHIDDEN) == 1 then
  redis.call('RENAME', XHIDDEN, XSTREAM)
  return 0
end
local lease = call_lease(call)
local n, last
if first then
  if redis.call('HSETNX', lease, 'w', worker) == 0 then
    return redis.error_reply('TAKEN the fetch call id is in use')
  end
  local read = redis.call('XPENDING', XSTREAM, 'g', first, '+', limit, worker)
  n, last = #read, read[#read] and read[#read][1]
else
  local before = redis.call('HMGET', lease, 'o', 'n')
  if not before[1] then
    return 0
  end
  n = pending_count(XSTREAM, worker) - tonumber(before[2])
  if n > 0 then
    first = redis.call('XPENDING', XSTREAM, 'g', '(' .. before[1], '+', 1, worker)[1][1]
    last = last_delivered(XSTREAM)
  end
  redis.call('HDEL', lease, 'o', 'n')
end
if n == 0 then
  redis.call('DEL', lease)
  return 0
end
record_lease(lease, call, worker, expiry, XSTREAM, first, last, n)
return finish(n)
