-- Completes jobs. ARGV[4..]: id, token, result per job. Returns 1 (accepted) or 0 per job.
-- The lease fields are emptied in the same HSET rather than deleted by another command, but
-- `l` keeps the mark of the completing lease: a completion repeated under that lease (the
-- first one applied, its reply was lost) is accepted again and changes nothing. A workflow
-- step's completion applies its `on_complete` effects (see effects.lua); a repeat does not.
local ids, done = {}, {}

local DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'

-- What a completed job keeps of its lease's token: the 64 random bits of its fetch and its
-- index in the batch, in 16 base64 digits (the other 32 bits are the queue's tag, the same for
-- every job here, see leases.rs). A 32-digit value would move the hash of a retained job to
-- the next allocation size.
local function mark(token)
  local hex = string.sub(token, 1, 16) .. string.sub(token, 25, 32)
  local out = {}
  for k = 1, #hex, 3 do
    local n = tonumber(string.sub(hex, k, k + 2), 16)
    local hi, lo = math.floor(n / 64) + 1, n % 64 + 1
    out[#out + 1] = string.sub(DIGITS, hi, hi) .. string.sub(DIGITS, lo, lo)
  end
  return table.concat(out)
end

-- Whether job `id` was completed under the lease `token`.
local function completed_under(id, token)
  local v = redis.call('HMGET', job_key(id), 's', 'l')
  return v[1] == 'c' and #token == 32 and v[2] == mark(token)
end

local out = each_leased(4, 3, function(i, id, key, u, _, k, wf)
  local lease, result = mark(ARGV[i + 1]), ARGV[i + 2]
  if #result > LONG then
    redis.call('SET', side_key('r', id), result)
    redis.call('HSET', key, 's', 'c', 'f', NOW_S, 'w', '', 'l', lease)
  else
    redis.call('HSET', key, 's', 'c', 'res', result, 'f', NOW_S, 'w', '', 'l', lease)
  end
  release_unique(u, id)
  stop_running(k)
  if wf then
    apply_effects(wf, 'on_complete', result)
  end
  ids[#ids + 1] = id
  done[#done + 1] = NOW_S
  done[#done + 1] = id
  return true
end)
for n = 1, #out do
  local i = 4 + 3 * (n - 1)
  if out[n] == 0 and completed_under(ARGV[i], ARGV[i + 1]) then
    out[n] = 1
  end
end
if #ids > 0 then
  zrem_all(RUNNING, ids)
  bulk('ZADD', DONE, done, 1000)
  recount_by('r', -#ids)
  recount_by('c', #ids)
end
return finish(out)
