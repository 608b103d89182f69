-- Jobs that coalesce at enqueue with an earlier job of the same queue and key (enqueue, cron).
--
-- A job's flow argument (see store.lua) is '' when it has neither key limits nor a coalesce
-- key; else 'k' (it has key limits) or '-', then the coalesce mode ('t' throttle, 'd' debounce,
-- '-' none), then `|window in microseconds|key`.
--
-- A throttle key is the string `th:<key>`, `until:id`: the job kept for the window and when
-- the window ends (kept a minute longer, then it expires). A debounce key's job is in the hash
-- `debounce`; it holds the key while it waits (pending or scheduled).
local DEBOUNCE
on_base(function()
  DEBOUNCE = BASE .. 'debounce'
end)

-- A job's flow argument `text` as its parts: whether it has key limits, then its coalesce mode
-- ('t' or 'd', nil when none), window (µs) and key.
local function job_flow(text)
  if text == '' then
    return false, nil
  end
  local mode, window, key = string.match(text, '^.(.)|(%d*)|(.*)$')
  if mode == '-' then
    mode = nil
  end
  return string.sub(text, 1, 1) == 'k', mode, tonumber(window), key
end

-- The id of the job that already answers for coalesce key `key` in mode `mode`, or nil: the
-- kept job of a throttle window still open, or the job of a debounce key while it waits (its
-- status `s` in the hash `waiting_in(id)` names; nil: its job hash).
local function coalesce_holder(mode, key, waiting_in)
  if mode == 't' then
    local held = redis.call('GET', BASE .. 'th:' .. key)
    local until_s, id = string.match(held or '', '^(%d+):(.*)$')
    if until_s and tonumber(until_s) > NOW then
      return id
    end
    return nil
  end
  local id = redis.call('HGET', DEBOUNCE, key)
  local s = id and redis.call('HGET', (waiting_in or job_key)(id), 's')
  if s == 'p' or s == 's' then
    return id
  end
  return nil
end

-- Records that the new job `id` took coalesce key `key` (mode 't' or 'd', window in µs).
local function hold_key(mode, key, window, id)
  if mode == 't' then
    local ms = math.ceil(window / 1000) + 60000
    redis.call('SET', BASE .. 'th:' .. key, int(NOW + window) .. ':' .. id, 'PX', int(ms))
  else
    redis.call('HSET', DEBOUNCE, key, id)
  end
end

-- The payload version (`v` field) among the hash fields of the job whose arguments start at
-- ARGV[s], or nil for version 1 (written only when it is another).
local function version_arg(s)
  for f = s + 8, s + 4 + tonumber(ARGV[s + 4]), 2 do
    if ARGV[f] == 'v' then
      return ARGV[f + 1]
    end
  end
  return nil
end

-- Folds the job whose arguments start at ARGV[s] into the waiting job `id`: its payload, with
-- its version, and its run_at replace the waiting job's, which is scheduled when that run_at is
-- still to come, else pending. Returns whether it is ready now.
local function debounce(s, id)
  local key = job_key(id)
  local v = redis.call('HMGET', key, 's', 'pr', 'ra', 'k', 'v', 'p', 'p2')
  local run_at = ARGV[s + 6]
  redis.call('ZREM', ready_of(v[4]), ready_member(v[3], id))
  redis.call('ZREM', DELAYED, id)
  local status = 'p'
  if tonumber(run_at) > NOW then
    status = 's'
    redis.call('ZADD', DELAYED, run_at, id)
  else
    redis.call('ZADD', ready_of(v[4]), v[2], ready_member(run_at, id))
  end
  -- The new payload goes where store.lua puts it, and the old one, where it was, goes.
  local fields, gone = { 's', status, 'ra', run_at }, {}
  local payload = ARGV[s + 2]
  local cut = payload_cut(payload)
  if cut then
    fields[#fields + 1] = 'p'
    fields[#fields + 1] = string.sub(payload, 1, cut)
    if cut < #payload then
      fields[#fields + 1] = 'p2'
      fields[#fields + 1] = string.sub(payload, cut + 1)
    elseif v[7] then
      gone[#gone + 1] = 'p2'
    end
    if not v[6] then
      redis.call('DEL', side_key('p', id))
    end
  else
    redis.call('SET', side_key('p', id), payload)
    if v[6] then
      gone[#gone + 1] = 'p'
    end
    if v[7] then
      gone[#gone + 1] = 'p2'
    end
  end
  local version = version_arg(s)
  if version then
    fields[#fields + 1] = 'v'
    fields[#fields + 1] = version
  elseif v[5] then
    gone[#gone + 1] = 'v'
  end
  redis.call('HSET', key, unpack(fields))
  if #gone > 0 then
    redis.call('HDEL', key, unpack(gone))
  end
  recount(v[1], status)
  return status == 'p'
end
