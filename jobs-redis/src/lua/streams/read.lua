-- Reads job ARGV[4]: nil when the queue does not hold it, else {its entry id, the entry's
-- fields, its result's `mark|started_at|finished_at|result` or false, then for a running job the worker,
-- the call's id, start and expiry}.
local id = ARGV[4]
local entry = redis.call('HGET', XIDS, id)
if not entry then
  return nil
end
local got = redis.call('XRANGE', XSTREAM, entry, entry)
if not got[1] then
  return nil
end
local result = redis.call('HGET', XRES, id) or false
local held = redis.call('XPENDING', XSTREAM, 'g', entry, entry, 1)
if result or not held[1] then
  return { entry, got[1][2], result }
end
-- Running: its lease is the call of its worker whose range holds the entry.
local worker = held[1][2]
local mine = worker .. '|'
for _, member in ipairs(redis.call('ZRANGE', XLEASES, 0, -1)) do
  if string.sub(member, 1, #mine) == mine then
    local call = string.sub(member, #mine + 1)
    local v = redis.call('HMGET', call_lease(call), 's', 'x', 'f', 'l')
    if v[3] and not entry_before(entry, v[3]) and not entry_before(v[4], entry) then
      return { entry, got[1][2], false, worker, call, v[1], v[2] }
    end
  end
end
return { entry, got[1][2], false, worker }
