-- Leases the next entries, once the delayed jobs due are added to the queue's stream: those of
-- `xr` first, then those of `x`. ARGV[4..]: lease expiry, worker, limit, the call's id (see
-- streams/token.rs). Returns the entries, each {entry id, {field, value, ...}} as XREADGROUP
-- gives them, none while the queue is paused; fails with `TAKEN` when another call holding
-- leases has the same id, which the caller draws again.
local expiry, worker, limit, call = ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7]
if redis.call('EXISTS', XSTREAM) == 0 or redis.call('HGET', BASE .. 'limits', 'pz') == '1' then
  return {}
end
local lease = call_lease(call)
if redis.call('HSETNX', lease, 'w', worker) == 0 then
  return redis.error_reply('TAKEN the fetch call id is in use')
end
promote_due(limit)
local entries, first, last = {}, nil, nil
for _, stream in ipairs(streams()) do
  if #entries < limit then
    local read = redis.call('XREADGROUP', 'GROUP', 'g', worker, 'COUNT', limit - #entries,
      'STREAMS', stream, '>')
    local got = read and read[1][2] or {}
    for _, e in ipairs(got) do
      entries[#entries + 1] = e
    end
    -- A stream's entries come in order: its first and last bound the call's range.
    if #got > 0 then
      if not first or entry_before(got[1][1], first) then
        first = got[1][1]
      end
      if not last or entry_before(last, got[#got][1]) then
        last = got[#got][1]
      end
    end
  end
end
if #entries == 0 then
  redis.call('DEL', lease)
  return finish({})
end
redis.call('HSET', lease, 's', NOW_S, 'x', expiry, 'f', first, 'l', last)
redis.call('ZADD', XLEASES, expiry, worker .. '|' .. call)
recount_by('q', -#entries)
recount_by('p', -#entries)
recount_by('r', #entries)
return finish(entries)
