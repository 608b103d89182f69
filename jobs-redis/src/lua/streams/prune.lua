-- Removes the oldest finished jobs (completed, cancelled) beyond the retention: ARGV[4] keep at
-- most this many ('' for no count limit), ARGV[5] remove those finished before this time ('' for no
-- age limit), ARGV[6] at most this many per call. Returns how many were removed. As the hash
-- layout's prune.lua, it takes `done`'s oldest member (the jobs of one completion call) at a time
-- and puts back what it leaves of it; a job of the member that finished another time since (it was
-- retried) is skipped. A removed job's entry (or, cancelled before it ran, its `d:<id>`), id,
-- result, progress and errors go, each kind in one command per member.
local limit, over, before = retention()
if not limit then
  return 0
end
local removed = 0
while removed < limit do
  local oldest = redis.call('ZRANGE', DONE, 0, 0, 'WITHSCORES')
  local member, at = oldest[1], oldest[2]
  local aged = at and before ~= nil and tonumber(at) < before
  if not member or not (removed < over or aged) then
    break
  end
  redis.call('ZREM', DONE, member)
  -- As many of the member's jobs as the retention lets go.
  local room = limit - removed
  if not aged then
    room = math.min(room, over - removed)
  end
  local ids, from = {}, 1
  while from < #member and #ids < room do
    ids[#ids + 1] = string.sub(member, from, from + ID_LEN - 1)
    from = from + ID_LEN
  end
  local ended = redis.call('HMGET', XRES, unpack(ids))
  local current = redis.call('HMGET', XIDS, unpack(ids))
  local entries, gone, side, cancelled = {}, {}, {}, 0
  for k, id in ipairs(ids) do
    local e = ended[k]
    if e and current[k] and string.sub(e, 1, 2) ~= 'd|'
      and string.match(e, '^[^|]*|[^|]*|([^|]*)|') == at then
      if current[k] == 'd' then
        -- Cancelled before it ran: its fields are its `d:<id>`.
        side[#side + 1] = delayed_key(id)
      else
        local stream, entry = located(current[k])
        entries[stream] = entries[stream] or {}
        table.insert(entries[stream], entry)
      end
      if string.sub(e, 1, 2) == 'x|' then
        cancelled = cancelled + 1
      end
      gone[#gone + 1] = id
      side[#side + 1] = side_key('e', id)
    end
  end
  for stream, list in pairs(entries) do
    bulk('XDEL', stream, list, 500)
  end
  if #gone > 0 then
    bulk('HDEL', XIDS, gone, 500)
    bulk('HDEL', XRES, gone, 500)
    bulk('HDEL', XPROGRESS, gone, 500)
    bulk('DEL', nil, side, 500)
    recount_by('c', cancelled - #gone)
    recount_by('x', -cancelled)
  end
  removed = removed + #gone
  if from < #member then
    redis.call('ZADD', DONE, at, string.sub(member, from))
  end
end
return finish(removed)
