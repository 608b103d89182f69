-- Stores jobs. ARGV[4..]: per job its shape, its `j` (the job's id leads it, its run_at
-- follows, see streams/packed.rs), then its entry's other fields, names and values. The shape
-- is '' for a job due now, of the default priority and without other fields, else
-- `<run_at>|<priority>|<n>`: its run_at when it is not due yet (else ''), its priority when
-- it is not the default (else '') and the number n of values after `j`. A job due now is an
-- entry of its priority's stream, a later one waits in `xdelayed`, scheduled. Returns the
-- number of jobs stored. Wakes the queue's workers when no entry waited for them (`q`): a
-- worker sleeps only after a fetch found none.
local seen, ids, ready, later, i = {}, {}, 0, 0, 4
local woken = (tonumber(redis.call('HGET', COUNTS, 'q')) or 0) > 0
while i <= #ARGV do
  local shape, j = ARGV[i], ARGV[i + 1]
  local run_at, p, count = '', nil, 0
  if shape ~= '' then
    local due, priority, n = string.match(shape, '^([^|]*)|([^|]*)|(%d+)$')
    run_at, count = due, tonumber(n)
    if priority ~= '' then
      p = priority
    end
  end
  local id = string.sub(j, 1, ID_LEN)
  if not seen[p or ''] then
    ensure_level(p)
    seen[p or ''] = true
  end
  if run_at == '' then
    local queued, _, prefix = level(p)
    local entry = redis.call('XADD', queued, '*', 'j', j, unpack(ARGV, i + 2, i + 1 + count))
    ids[#ids + 1] = id
    ids[#ids + 1] = prefix .. entry
    ready = ready + 1
  else
    redis.call('HSET', delayed_key(id), 's', 's', 'j', j, unpack(ARGV, i + 2, i + 1 + count))
    redis.call('ZADD', XDELAYED, run_at, id)
    ids[#ids + 1] = id
    ids[#ids + 1] = 'd'
    later = later + 1
  end
  i = i + 2 + count
end
bulk('HSET', XIDS, ids, 1000)
if ready > 0 and not woken then
  wake()
end
recount_by('q', ready)
recount_by('p', ready)
recount_by('s', later)
return finish(ready + later)
