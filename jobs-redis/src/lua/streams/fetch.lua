-- Leases the next entries of the queue's stream. ARGV[4..]: lease expiry, worker, limit, the
-- call's id (see streams/token.rs). Returns the entries, each {entry id, {field, value, ...}}
-- as XREADGROUP gives them, none while the queue is paused; fails with `TAKEN` when another
-- call holding leases has the same id, which the caller draws again.
local expiry, worker, call = ARGV[4], ARGV[5], ARGV[7]
if redis.call('EXISTS', XSTREAM) == 0 or redis.call('HGET', BASE .. 'limits', 'pz') == '1' then
  return {}
end
local lease = call_lease(call)
if redis.call('HSETNX', lease, 'w', worker) == 0 then
  return redis.error_reply('TAKEN the fetch call id is in use')
end
local read = redis.call('XREADGROUP', 'GROUP', 'g', worker, 'COUNT', ARGV[6],
  'STREAMS', XSTREAM, '>')
if not read then
  redis.call('DEL', lease)
  return {}
end
local entries = read[1][2]
redis.call('HSET', lease, 's', NOW_S, 'x', expiry, 'f', entries[1][1], 'l', entries[#entries][1])
redis.call('ZADD', XLEASES, expiry, worker .. '|' .. call)
recount_by('p', -#entries)
recount_by('r', #entries)
return finish(entries)
