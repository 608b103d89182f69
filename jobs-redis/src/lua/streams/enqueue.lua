-- Stores jobs. ARGV[4..]: per job its id, its run_at when it is not due yet (else ''), the
-- number n of values that follow, then n values: its entry's field names and values. A job due
-- now is an entry of the queue's stream, a later one waits in `xdelayed`, scheduled. Returns
-- the number of jobs stored. Wakes the queue's workers when no entry waited for them (`q`):
-- a worker sleeps only after a fetch found none.
ensure_stream(XSTREAM)
local ids, ready, later, i = {}, 0, 0, 4
while i <= #ARGV do
  local id, run_at, count = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  ids[#ids + 1] = id
  if run_at == '' then
    ids[#ids + 1] = redis.call('XADD', XSTREAM, '*', 'i', id, unpack(ARGV, i + 3, i + 2 + count))
    ready = ready + 1
  else
    redis.call('HSET', delayed_key(id), 's', 's', unpack(ARGV, i + 3, i + 2 + count))
    redis.call('ZADD', XDELAYED, run_at, id)
    ids[#ids + 1] = 'd'
    later = later + 1
  end
  i = i + 3 + count
end
bulk('HSET', XIDS, ids, 1000)
if ready > 0 and (tonumber(redis.call('HGET', COUNTS, 'q')) or 0) == 0 then
  wake()
end
recount_by('q', ready)
recount_by('p', ready)
recount_by('s', later)
return finish(ready + later)
