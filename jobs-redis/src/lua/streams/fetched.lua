-- Ends a fetch: the last command of its transaction (see fetch.lua). Names `x` back when
-- fetch.lua hid it. When fetch.lua left the read to the `XREADGROUP`, writes the call's lease
-- over what it read: this worker's pending entries of `x` after `o` (none of them older: `o`
-- was the last entry delivered before), or drops the lease when it read none. ARGV[4..]: lease
-- expiry, worker, limit, the call's id, and, when fetch.lua did not run (the library was
-- missing, and loaded since), the first entry the `XREADGROUP` read: the lease is then taken
-- here. Returns how many entries the call leased through the `XREADGROUP`.
local expiry, worker, limit, call, first = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
if redis.call('EXISTS', XHIDDEN) == 1 then
  redis.call('RENAME', XHIDDEN, XSTREAM)
  return 0
end
local lease = call_lease(call)
local from
if first then
  if redis.call('HSETNX', lease, 'w', worker) == 0 then
    return redis.error_reply('TAKEN the fetch call id is in use')
  end
  from = first
else
  local o = redis.call('HGET', lease, 'o')
  if not o then
    return 0
  end
  from = '(' .. o
end
local read = redis.call('XPENDING', XSTREAM, 'g', from, '+', limit, worker)
if #read == 0 then
  redis.call('DEL', lease)
  return 0
end
redis.call('HDEL', lease, 'o')
record_lease(lease, call, worker, expiry, XSTREAM, read[1][1], read[#read][1], #read)
return finish(#read)
