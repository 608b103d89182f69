-- Stores jobs. ARGV[4..]: per job its run_at when it is not due yet (else ''), its priority
-- when it is not the default (else ''), the number n of values that follow, then n values: its
-- entry's field names and values, `j` first (the job's id leads it, see streams/packed.rs). A
-- job due now is an entry of its priority's stream, a later one waits in `xdelayed`,
-- scheduled. Returns the number of jobs stored. Wakes the queue's workers when no entry waited
-- for them (`q`): a worker sleeps only after a fetch found none.
local seen, ids, ready, later, i = {}, {}, 0, 0, 4
local woken = (tonumber(redis.call('HGET', COUNTS, 'q')) or 0) > 0
while i <= #ARGV do
  local run_at, p, count = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local id = string.sub(ARGV[i + 4], 1, ID_LEN)
  if p == '' then
    p = nil
  end
  if not seen[p or ''] then
    ensure_level(p)
    seen[p or ''] = true
  end
  if run_at == '' then
    local queued, _, prefix = level(p)
    local entry = redis.call('XADD', queued, '*', unpack(ARGV, i + 3, i + 2 + count))
    ids[#ids + 1] = id
    ids[#ids + 1] = prefix .. entry
    ready = ready + 1
  else
    redis.call('HSET', delayed_key(id), 's', 's', unpack(ARGV, i + 3, i + 2 + count))
    redis.call('ZADD', XDELAYED, run_at, id)
    ids[#ids + 1] = id
    ids[#ids + 1] = 'd'
    later = later + 1
  end
  i = i + 3 + count
end
bulk('HSET', XIDS, ids, 1000)
if ready > 0 and not woken then
  wake()
end
recount_by('q', ready)
recount_by('p', ready)
recount_by('s', later)
return finish(ready + later)
