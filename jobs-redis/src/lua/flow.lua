-- Flow control in fetch and peek: the queue's concurrency and rate, and each job's key limits.
--
-- A fetch gets the queue's limits as the worker last read them, as one argument: '' for a
-- queue that has none and holds no jobs with key limits, else `concurrency|rate limit|rate
-- period in ms|ended leases` (a part empty when unset), the last part the worker's leases of
-- the queue whose attempts have ended (`id:token`, space separated): while a job still runs
-- under such a lease, no concurrency counts it (see `left_out`).
--
-- The queue's running jobs are its running set; its
-- starts, and those of each key whose limits have a rate, are sliding logs (`starts`,
-- `kstarts:<key>`): one entry per fetch batch, scored by its time, the member the fetch's
-- token prefix and the count, and one entry `total:<n>` scored +inf holding the sum of the
-- others, so counting reads only the entries that leave the window (dropped as they do); a
-- log expires a minute after its window. The running jobs of each key are counted in `krun`
-- (fetch adds, every script that moves a job out of running subtracts: see `stop_running`).
--
-- Ready jobs with key limits wait in `kready`, apart from `ready`, so that a plain fetch never
-- reads them; a flow fetch walks both in their merged order (priority, run_at, id).

local STARTS, KSTARTS
on_base(function()
  STARTS = BASE .. 'starts'
  KSTARTS = BASE .. 'kstarts:'
end)

-- At most this many jobs held back by their key are looked past per call (jobs-core's
-- FLOW_SCAN).
local FLOW_SCAN = 1000

-- The worker's ended leases of the queue, as `read_flow` found them.
local ended = ''

-- The queue's limits given in ARGV[i], or nil when it has none to check.
local function read_flow(i)
  if ARGV[i] == '' then
    return nil
  end
  local c, l, p, r, e = string.match(ARGV[i], '^(%d*)|(%d*)|(%d*)|(%d*)|(.*)$')
  ended = e
  return {
    concurrency = tonumber(c), rate = tonumber(l), period = tonumber(p), reserve = tonumber(r) or 0,
  }
end

-- Of the running jobs, those still under one of the worker's ended leases: their handlers run
-- no more, so no concurrency counts them. {total = n, keys = {[key] = n}}, read once per call.
local uncounted = nil
local function left_out()
  if not uncounted then
    uncounted = { total = 0, keys = {} }
    local seen = {}
    for id, token in string.gmatch(ended, '(%x+):(%x+)') do
      local f = not seen[id] and redis.call('HMGET', job_key(id), 's', 'l', 'k')
      seen[id] = true
      if f and f[1] == 'r' and f[2] and string.sub(f[2], 1, #token + 1) == token .. ':' then
        uncounted.total = uncounted.total + 1
        local key = f[3] and key_of(f[3])
        if key then
          uncounted.keys[key] = (uncounted.keys[key] or 0) + 1
        end
      end
    end
  end
  return uncounted
end

-- The `total:<n>` entry of `log` (nil for an empty log) and its n.
local function log_total(log)
  local top = redis.call('ZRANGE', log, -1, -1)[1]
  return top, top and tonumber(string.match(top, '^total:(%d+)$')) or 0
end

-- Replaces `log`'s total entry `old` (nil: none) by one of `n`.
local function set_total(log, old, n)
  if old then
    redis.call('ZREM', log, old)
  end
  redis.call('ZADD', log, '+inf', 'total:' .. n)
end

-- The starts that `log` holds inside the window of `period` ms that ends now (the older ones
-- are dropped, and the total with them).
local function started(log, period)
  local cutoff = int(NOW - period * 1000)
  local gone = 0
  for _, entry in ipairs(redis.call('ZRANGEBYSCORE', log, '-inf', cutoff)) do
    gone = gone + tonumber(string.match(entry, ':(%d+)$'))
  end
  local top, total = log_total(log)
  if gone > 0 then
    redis.call('ZREMRANGEBYSCORE', log, '-inf', cutoff)
    set_total(log, top, total - gone)
  end
  return total - gone
end

-- Logs `n` starts now in `log`, whose rate has a period of `period` ms (the entry's member is
-- `tag`, which no other fetch's starts share, and the count).
local function log_starts(log, tag, n, period)
  local top, total = log_total(log)
  redis.call('ZADD', log, NOW_S, tag .. ':' .. n)
  set_total(log, top, total + n)
  redis.call('PEXPIRE', log, int(period + 60000))
end

-- Whether jobs with key limits wait in `kready` (asked once per call).
local keyed = nil

on_call(function()
  ended, uncounted, keyed = '', nil, nil
end)
local function keyed_waiting()
  if keyed == nil then
    keyed = redis.call('ZCARD', KREADY) > 0
  end
  return keyed
end

-- How many running jobs hold reserved leases: leased beyond the queue's concurrency
-- (`FetchParams::reserve`), they count for no limit while they run. Each is in `reserved`,
-- scored by its lease's expiry as in `running`, until it leaves running; one whose expiry
-- passed is dropped (should a script of an earlier release have ended it), which counts it
-- again: never more than the limit runs.
local function reserved_count()
  redis.call('ZREMRANGEBYSCORE', RESERVED, '-inf', '(' .. NOW_S)
  return redis.call('ZCARD', RESERVED)
end

-- The places under the concurrency that the workers' promoted jobs hold (reserved jobs handed
-- the place of an ended job): `places`, worker -> n, set by places.lua.
local function places_count()
  local n = 0
  for _, v in ipairs(redis.call('HVALS', PLACES)) do
    n = n + tonumber(v)
  end
  return n
end

-- Whether a fetch under `flow` reserves leases beyond the queue's concurrency: asked to, with a
-- concurrency alone and no jobs with key limits waiting.
local function reserving(flow)
  return flow and flow.reserve > 0 and flow.concurrency and not flow.rate and not keyed_waiting()
end

-- How many of `limit` jobs the queue's limits `flow` (nil: none) let start now, `running()`
-- the queue's running jobs that its concurrency counts (asked only when it has one).
local function room_under(limit, flow, running)
  local room = limit
  if flow and flow.concurrency then
    room = math.min(room, flow.concurrency - running())
  end
  if flow and flow.rate then
    room = math.min(room, flow.rate - started(STARTS, flow.period))
  end
  return math.max(room, 0)
end

-- How many of `limit` jobs the queue's limits `flow` (nil: none) let start now: the running
-- set counts, less the jobs under the worker's ended leases and the reserved ones, plus the
-- places that promoted jobs hold.
local function queue_room(limit, flow)
  return room_under(limit, flow, function()
    return redis.call('ZCARD', RUNNING) - left_out().total - reserved_count() + places_count()
  end)
end

-- A reader of sorted set `set` in order, `window` members at a time.
local function reader(set, window)
  return { set = set, window = window, from = 0, buf = {}, at = 1 }
end

-- The reader's next member and score (text), or nil at the end; it stays there until `skip`.
local function upcoming(r)
  if r.at > #r.buf and not r.ended then
    r.buf = redis.call('ZRANGE', r.set, r.from, r.from + r.window - 1, 'WITHSCORES')
    r.from = r.from + r.window
    r.at = 1
    r.ended = #r.buf == 0
  end
  return r.buf[r.at], r.buf[r.at + 1]
end

-- Whether the job of ready member `m` with score `s` comes before that of `m2`, `s2`.
local function before(m, s, m2, s2)
  local a, b = tonumber(s), tonumber(s2)
  return a < b or (a == b and m < m2)
end

-- Whether one more job with key limits `k` (its `k` field) may start now, `keys` holding what
-- this call read and granted of each key; if so, counts it as granted and returns its key and
-- its rate's period (nil without a rate).
local function key_room(keys, k)
  local c, l, p, key = string.match(k, '^(%d*)|(%d*)|(%d*)|(.*)$')
  c, l, p = tonumber(c), tonumber(l), tonumber(p)
  local state = keys[key]
  if not state then
    local running = (tonumber(redis.call('HGET', KRUN, key)) or 0) - (left_out().keys[key] or 0)
    state = { running = running, granted = 0, started = {} }
    keys[key] = state
  end
  if c and state.running + state.granted >= c then
    return nil
  end
  if l then
    state.started[p] = state.started[p] or started(KSTARTS .. key, p)
    if state.started[p] + state.granted >= l then
      return nil
    end
  end
  state.granted = state.granted + 1
  return key, l and p
end

-- The first `room` ready jobs, of `ready` and `kready` in their merged order, that each job's
-- key limits let start now, of the jobs `known` takes (nil: every job, see `takes`), without
-- taking them (the caller applied the queue's own limits to `room`): a list of {member, score,
-- fields, set, key, key rate period}. Looks past at most FLOW_SCAN jobs held back by their key,
-- and KNOWN_SCAN of other names or newer versions.
local function flow_head(room, known)
  local out = {}
  local window = math.max(room, 16)
  local plain, keyed = reader(READY, window), reader(KREADY, window)
  local keys, held, unknown = {}, 0, 0
  while #out < room and held < FLOW_SCAN and unknown < KNOWN_SCAN do
    local r, m, s = plain, upcoming(plain)
    local km, ks = upcoming(keyed)
    if km and (not m or before(km, ks, m, s)) then
      r, m, s = keyed, km, ks
    end
    if not m then
      break
    end
    r.at = r.at + 2
    local fields = redis.call('HGETALL', job_key(string.sub(m, 15)))
    local k = r == keyed and field_of(fields, 'k')
    if known and not takes(known, fields) then
      unknown = unknown + 1
    elseif k then
      local key, period = key_room(keys, k)
      if key then
        out[#out + 1] = { m, s, fields, r.set, key, period }
      else
        held = held + 1
      end
    else
      out[#out + 1] = { m, s, fields, r.set }
    end
  end
  return out
end

-- Counts the starts of the jobs `flow_head` picked and this fetch took: the running jobs of
-- each key, and the starts of each key's rate (logged under `tag`, see `log_starts`).
local function count_key_starts(taken, tag)
  local running, rated = {}, {}
  for _, job in ipairs(taken) do
    local key, period = job[5], job[6]
    if key then
      running[key] = (running[key] or 0) + 1
    end
    if period then
      local r = rated[key] or { 0, period }
      rated[key] = { r[1] + 1, math.max(r[2], period) }
    end
  end
  for key, n in pairs(running) do
    redis.call('HINCRBY', KRUN, key, n)
  end
  for key, r in pairs(rated) do
    log_starts(KSTARTS .. key, tag, r[1], r[2])
  end
end
