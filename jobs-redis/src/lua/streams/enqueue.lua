-- Stores jobs as entries of the queue's stream. ARGV[4..]: per job its id, the number n of
-- values that follow, then n values: its entry's field names and values. Returns the number
-- of jobs stored. Wakes the queue's workers when it had no pending job.
if redis.call('EXISTS', XSTREAM) == 0 then
  redis.call('XGROUP', 'CREATE', XSTREAM, 'g', '0', 'MKSTREAM')
end
local ids, n, i = {}, 0, 4
while i <= #ARGV do
  local id, count = ARGV[i], tonumber(ARGV[i + 1])
  ids[#ids + 1] = id
  ids[#ids + 1] = redis.call('XADD', XSTREAM, '*', 'i', id, unpack(ARGV, i + 2, i + 1 + count))
  n = n + 1
  i = i + 2 + count
end
bulk('HSET', XIDS, ids, 1000)
if (tonumber(redis.call('HGET', COUNTS, 'p')) or 0) == 0 then
  wake()
end
recount_by('p', n)
return finish(n)
