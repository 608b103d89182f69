-- Reads job ARGV[4]: nil when the queue does not hold it, else {its entry id (`d` while it
-- waits in `xdelayed`), its fields (a delayed job's with its status `s`), how it ended (see
-- `res`) or false, its errors, its progress or false, then for a running job its worker, its
-- fetch call's id, its start and its expiry}.
local id = ARGV[4]
local current = redis.call('HGET', XIDS, id)
if not current then
  return nil
end
local errors = redis.call('LRANGE', side_key('e', id), 0, -1)
local progress = redis.call('HGET', XPROGRESS, id) or false
if current == 'd' then
  return { current, redis.call('HGETALL', delayed_key(id)), false, errors, progress }
end
local stream, entry = located(current)
local fields = entry_fields(stream, entry)
if not fields then
  return nil
end
local ended = redis.call('HGET', XRES, id) or false
local held = redis.call('XPENDING', stream, 'g', entry, entry, 1)
if ended or not held[1] then
  return { entry, fields, ended, errors, progress }
end
-- Running: its lease is the call of its worker that read its stream over a range that holds it.
local worker = held[1][2]
local mine = worker .. '|'
for _, member in ipairs(redis.call('ZRANGE', XLEASES, 0, -1)) do
  if string.sub(member, 1, #mine) == mine then
    local call = string.sub(member, #mine + 1)
    local v = redis.call('HMGET', call_lease(call), 's', 'x', 'f', 'l', entry, 'k')
    if v[3] and BASE .. v[6] == stream and not entry_before(entry, v[3])
      and not entry_before(v[4], entry) then
      return { entry, fields, false, errors, progress, worker, call, v[1], v[5] or v[2] }
    end
  end
end
return { entry, fields, false, errors, progress, worker }
