-- Starts a fetch: the first of the three commands of its transaction (this script, an
-- `XREADGROUP` of `x` with the call's worker and limit, then fetched.lua; see
-- streams/fetch.rs). Adds the delayed jobs due to the queue's streams first. When the next
-- entries to lease are `x`'s (see `next_is_x`), it leaves the read to the `XREADGROUP`, which
-- hands its entries to the client as Redis reads them, without going through Lua: it records
-- in the call's lease `o`, the last entry `x`'s group delivered before, and `n`, how many of
-- `x`'s entries are pending for the worker, and returns 'plain'. Else it reads the first
-- stream that holds entries itself, in the order of `streams` (by priority, `xr` before `x`),
-- writes the call's lease, and returns the entries, each {entry id, {field, value, ...}} as
-- XREADGROUP gives them; then, and when the queue is paused or the call's id is taken, it
-- hides `x` from the `XREADGROUP` (renamed `xhidden`, which fetched.lua names back). One call
-- takes from one stream, so that its entries are the range from its first to its last there,
-- which no other call's overlaps. ARGV[4..]: lease expiry, worker, limit, the call's id (see
-- streams/token.rs), the queue's limits as flow.lua's `read_flow` reads them ('' when the
-- worker knows of none; their last part, the worker's ended leases, empty), then those ended
-- leases of the queue, each its fetch call, entry and job id. The limits lower the call's
-- limit to what they let start; the `XREADGROUP`, whose count is the asked one, reads only when
-- that is the whole limit and the queue has no rate (whose starts this script logs). Fails
-- with `TAKEN` when another call holding leases has the same id, which the caller draws again.
local expiry, worker, asked, call = ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7]
if not x_exists() then
  return {}
end
if redis.call('HGET', BASE .. 'limits', 'pz') == '1' then
  hide_x()
  return {}
end
local flow = read_flow(8)
-- The running jobs less those still under one of the worker's ended leases (each once):
-- their handlers run no more.
local limit = room_under(asked, flow, function()
  local ended = 0
  if #ARGV >= 9 then
    local seen = {}
    for n, c in ipairs(fenced(9, 3)) do
      local id = ARGV[9 + 3 * n - 1]
      if c and not seen[id] then
        seen[id] = true
        ended = ended + 1
      end
    end
  end
  return (tonumber(redis.call('HGET', COUNTS, 'r')) or 0) - ended
end)
if limit == 0 then
  hide_x()
  return {}
end
local lease = call_lease(call)
if redis.call('HSETNX', lease, 'w', worker) == 0 then
  hide_x()
  return redis.error_reply('TAKEN the fetch call id is in use')
end
promote_due(limit)
local rated = flow and flow.rate
if limit == asked and not rated and next_is_x() then
  redis.call('HSET', lease, 'o', last_delivered(XSTREAM), 'n', pending_count(XSTREAM, worker))
  return finish('plain')
end
hide_x()
local entries, from = {}, nil
for _, stream in ipairs(streams()) do
  if stream == XSTREAM then
    stream = XHIDDEN
  end
  local read = redis.call('XREADGROUP', 'GROUP', 'g', worker, 'COUNT', limit,
    'STREAMS', stream, '>')
  if read then
    entries, from = read[1][2], stream
    break
  end
end
if not from then
  redis.call('DEL', lease)
  return finish({})
end
if from == XHIDDEN then
  from = XSTREAM
end
record_lease(lease, call, worker, expiry, from, entries[1][1], entries[#entries][1], #entries)
if rated then
  log_starts(STARTS, call .. '-' .. entries[1][1], #entries, flow.period)
end
return finish(entries)
