-- Stores jobs. ARGV[4..]: per job its shape, its `j` (the job's id leads it, its run_at
-- follows, see streams/packed.rs), then its entry's other fields, names and values. The shape
-- is '' for a job due now, of the default priority and without other fields, else
-- `<run_at>|<priority>|<n>`: its run_at when it is not due yet (else ''), its priority when
-- it is not the default (else '') and the number n of values after `j`. A job due now is an
-- entry of its priority's stream, a later one waits in `xdelayed`, scheduled. Returns the
-- number of jobs stored. Wakes the queue's workers when no entry waited for them (`q`): a
-- worker sleeps only after a fetch found none; but not when every job went to `x` while a
-- blocked read of it is under way (`xwaiting`, see wait.lua): the `XADD` serves the read, and
-- a worker whose read took jobs fetches before it sleeps again.
local seen, ids, n, ready, later, i = {}, {}, 0, 0, 0, 4
-- The ready jobs of another stream than `x`, which no blocked read takes.
local elsewhere = 0
local woken = (tonumber(redis.call('HGET', COUNTS, 'q')) or 0) > 0
ensure_level(nil)
while i <= #ARGV do
  local shape, j = ARGV[i], ARGV[i + 1]
  local id = string.sub(j, 1, ID_LEN)
  if shape == '' then
    -- Most jobs: due now, of the default priority, `j` alone; the loop's fast path.
    ids[n + 1], ids[n + 2] = id, redis.call('XADD', XSTREAM, '*', 'j', j)
    ready = ready + 1
    i = i + 2
  else
    local run_at, priority, count = string.match(shape, '^([^|]*)|([^|]*)|(%d+)$')
    local p, last = nil, i + 1 + tonumber(count)
    if priority ~= '' then
      p = priority
      if not seen[p] then
        ensure_level(p)
        seen[p] = true
      end
    end
    ids[n + 1] = id
    if run_at == '' then
      local queued, _, prefix = level(p)
      ids[n + 2] = prefix .. redis.call('XADD', queued, '*', 'j', j, unpack(ARGV, i + 2, last))
      ready = ready + 1
      if p then
        elsewhere = elsewhere + 1
      end
    else
      redis.call('HSET', delayed_key(id), 's', 's', 'j', j, unpack(ARGV, i + 2, last))
      redis.call('ZADD', XDELAYED, run_at, id)
      ids[n + 2] = 'd'
      later = later + 1
    end
    i = last + 1
  end
  n = n + 2
end
bulk('HSET', XIDS, ids, 1000)
if ready > 0 then
  hold_if_paused()
  if not woken and (elsewhere > 0 or redis.call('HLEN', XWAITING) == 0) then
    wake()
  end
end
recount_by('q', ready)
recount_by('p', ready)
recount_by('s', later)
return finish(ready + later)
