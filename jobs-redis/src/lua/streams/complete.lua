-- Completes jobs. ARGV[4..]: the least and greatest entry of the batch, then per job its
-- fetch call's id, its entry, its id, the mark of its token and its result. A job counts while
-- the id map names that entry for it and the entry is pending for its call's worker (the fence:
-- one HMGET, one XPENDING over the batch's range, one HMGET per call). Its entry is
-- acknowledged and `mark|started_at|finished_at|result` stored in `res`; a call none of whose entries is pending any more is dropped. Returns
-- a digit per job, 1 (accepted) or 0; a completion repeated under the lease it applied under
-- is accepted again and changes nothing.
local FIRST, STEP = 6, 5
local ids = {}
for i = FIRST, #ARGV, STEP do
  ids[#ids + 1] = ARGV[i + 2]
end
local current = redis.call('HMGET', XIDS, unpack(ids))
-- The pending entries of the batch's range, and their consumers, a page at a time.
local pending, from = {}, ARGV[4]
while true do
  local page = redis.call('XPENDING', XSTREAM, 'g', from, ARGV[5], 1000)
  for _, p in ipairs(page) do
    pending[p[1]] = p[2]
  end
  if #page < 1000 then
    break
  end
  from = '(' .. page[#page][1]
end
local calls, acks, results, done, out = {}, {}, {}, {}, {}
for n = 1, #ids do
  local i = FIRST + STEP * (n - 1)
  local call, entry = ARGV[i], ARGV[i + 1]
  local c = calls[call]
  if c == nil then
    local v = redis.call('HMGET', call_lease(call), 'w', 'f', 'l', 's')
    c = v[1] and { worker = v[1], first = v[2], last = v[3], started = v[4] } or false
    calls[call] = c
  end
  if c and current[n] == entry and pending[entry] == c.worker then
    acks[#acks + 1] = entry
    results[#results + 1] = ids[n]
    results[#results + 1] = ARGV[i + 3] .. '|' .. c.started .. '|' .. NOW_S .. '|' .. ARGV[i + 4]
    done[#done + 1] = ids[n]
    out[n] = '1'
  else
    out[n] = '0'
  end
end
if #acks > 0 then
  on_group('XACK', acks)
  bulk('HSET', XRES, results, 1000)
  redis.call('ZADD', DONE, NOW_S, table.concat(done))
  recount_by('r', -#acks)
  recount_by('c', #acks)
  for call, c in pairs(calls) do
    if c and #redis.call('XPENDING', XSTREAM, 'g', c.first, c.last, 1, c.worker) == 0 then
      redis.call('DEL', call_lease(call))
      redis.call('ZREM', XLEASES, c.worker .. '|' .. call)
    end
  end
end
for n = 1, #ids do
  if out[n] == '0' then
    local r = redis.call('HGET', XRES, ids[n])
    if r and string.sub(r, 1, 17) == ARGV[FIRST + STEP * (n - 1) + 3] .. '|' then
      out[n] = '1'
    end
  end
end
return finish(table.concat(out))
