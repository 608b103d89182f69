-- Leases the next entries, once the delayed jobs due are added to the queue's streams: those of
-- the first stream that holds any, in the order of `streams` (by priority, `xr` before `x`).
-- One call takes from one stream, so that its entries are the range from its first to its last
-- there, which no other call's overlaps. ARGV[4..]: lease expiry, worker, limit, the call's id
-- (see streams/token.rs). Returns the entries, each {entry id, {field, value, ...}} as XREADGROUP
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
local entries, from = {}, nil
for _, stream in ipairs(streams()) do
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
redis.call('HSET', lease, 's', NOW_S, 'x', expiry, 'f', entries[1][1], 'l',
  entries[#entries][1], 'k', string.sub(from, #BASE + 1))
redis.call('ZADD', XLEASES, expiry, worker .. '|' .. call)
recount_by('q', -#entries)
recount_by('p', -#entries)
recount_by('r', #entries)
return finish(entries)
