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
for _, c in ipairs(leases_of(worker)) do
  if covers(c, stream, entry) then
    local expiry = redis.call('HGET', call_lease(c.call), entry) or c.expiry
    return { entry, fields, false, errors, progress, worker, c.call, c.started, expiry }
  end
end
return { entry, fields, false, errors, progress, worker }
