-- Moving jobs between states outside the hot path.

-- Deletes job `id`: its hash, its side keys and its entries in the tag indexes (`tags` is its
-- `tg` field, false or nil when it has none). The caller takes it out of the sets of its status
-- (`unindex`) and of the set of all jobs.
local function delete_job(key, id, tags)
  if tags then
    for _, tag in ipairs(cjson.decode(tags)) do
      redis.call('ZREM', TAG .. tag, id)
    end
  end
  redis.call('DEL', key, side_key('p', id), side_key('r', id), side_key('e', id))
end

-- The finished jobs of a call that leave `done` are listed in a table of its own, `leaving`:
-- by the time they finished (their `f` field, text), a set of ids each. `forget_finished`
-- lists them; `leave_done` takes them out at the end of the call, each member of `done`
-- rewritten once however many of its jobs leave.

-- Lists job `id`, finished at `at`, in `leaving`.
local function forget_finished(leaving, id, at)
  if at then
    leaving[at] = leaving[at] or {}
    leaving[at][id] = true
  end
end

-- Takes the jobs listed in `leaving` out of the members of `done` that hold them: the members
-- of their finish time, which keep their other jobs (see head.lua).
local function leave_done(leaving)
  for at, ids in pairs(leaving) do
    for _, member in ipairs(redis.call('ZRANGE', DONE, at, at, 'BYSCORE')) do
      local kept, changed = {}, false
      for from = 1, #member, ID_LEN do
        local id = string.sub(member, from, from + ID_LEN - 1)
        if ids[id] then
          changed = true
        else
          kept[#kept + 1] = id
        end
      end
      if changed then
        redis.call('ZREM', DONE, member)
        if #kept > 0 then
          redis.call('ZADD', DONE, at, table.concat(kept))
        end
      end
    end
  end
end

-- Takes a job in status `s` out of the sets of that status (and frees its unique key); a
-- finished one is listed in `leaving` (see `forget_finished`).
local function unindex(key, id, s, leaving)
  local v = redis.call('HMGET', key, 'ra', 'u', 'k', 'f')
  if s == 'p' or s == 's' then
    redis.call('ZREM', ready_of(v[3]), ready_member(v[1], id))
    redis.call('ZREM', DELAYED, id)
  elseif s == 'r' then
    redis.call('ZREM', RUNNING, id)
    stop_running(v[3])
    forget_reserved({ id })
  elseif s == 'c' or s == 'x' then
    forget_finished(leaving, id, v[4])
  elseif s == 'd' then
    redis.call('ZREM', DEAD, id)
  end
  release_unique(v[2], id)
  recount(s, nil)
end

-- Ends the running attempt of job `id` with the error `report` (a JSON object: kind, message,
-- chain), stored with the attempt number and the time: pending again at `retry_at` (text), or
-- dead when it is nil, applying then the `on_dead` effects of a workflow step (see
-- effects.lua). Returns true when the job is ready at once.
local function finish_attempt(key, id, report, retry_at)
  local v = redis.call('HMGET', key, 'a', 'pr', 'u', 'k', 'wf')
  -- An unreadable attempt number is recorded as 0, so the list of errors stays JSON.
  local entry = '{"a":' .. int(tonumber(v[1]) or 0) .. ',"t":' .. NOW_S .. ','
    .. string.sub(report, 2)
  local n = redis.call('RPUSH', side_key('e', id), entry)
  clear_lease(key, id, v[4])
  if retry_at then
    redis.call('HSET', key, 's', 'p', 'ra', retry_at, 'ne', n)
    recount('r', 'p')
    if tonumber(retry_at) <= NOW then
      redis.call('ZADD', ready_of(v[4]), v[2], ready_member(retry_at, id))
      return true
    end
    redis.call('ZADD', DELAYED, retry_at, id)
    return false
  end
  redis.call('HSET', key, 's', 'd', 'f', NOW_S, 'ne', n)
  redis.call('ZADD', DEAD, '0', id)
  recount('r', 'd')
  release_unique(v[3], id)
  if v[5] then
    apply_effects(v[5], 'on_dead', nil)
  end
  return false
end
