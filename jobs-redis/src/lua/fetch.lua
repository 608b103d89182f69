-- Leases ready jobs: promotes due delayed jobs, then pops the lowest of the ready set (whose
-- jobs are all pending).
-- ARGV[4] lease expiry, ARGV[5] worker, ARGV[6] limit, ARGV[7] the first 24 hex digits of this
-- fetch's lease tokens (each job's token ends with its 8-digit index in the batch).
-- Returns {id, token, stored} per leased job, `stored` as `read` gives it.
promote(1000)
local limit = tonumber(ARGV[6])
local out = {}
if limit < 1 then
  return finish(out)
end
local popped = redis.call('ZPOPMIN', READY, limit)
for j = 1, #popped, 2 do
  local id = string.sub(popped[j], 15)
  local key = job_key(id)
  local token = ARGV[7] .. string.format('%08x', #out)
  redis.call('HINCRBY', key, 'a', 1)
  redis.call('HSET', key, 's', 'r', 'st', NOW_S, 'w', ARGV[5], 'k', token, 'le', ARGV[4])
  redis.call('ZADD', RUNNING, ARGV[4], id)
  recount('p', 'r')
  out[#out + 1] = { id, token, read(key, id) }
end
return finish(out)
