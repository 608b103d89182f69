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
-- streams/token.rs). Fails with `TAKEN` when another call holding leases has the same id,
-- which the caller draws again.
local expiry, worker, limit, call = ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7]
if not x_exists() then
  return {}
end
if redis.call('HGET', BASE .. 'limits', 'pz') == '1' then
  hide_x()
  return {}
end
local lease = call_lease(call)
if redis.call('HSETNX', lease, 'w', worker) == 0 then
  hide_x()
  return redis.error_reply('TAKEN the fetch call id is in use')
end
promote_due(limit)
if next_is_x() then
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
return finish(entries)
