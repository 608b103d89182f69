-- Starts a fetch: the first of the three commands of its transaction (this script, an
-- `XREADGROUP` of `x` with the call's worker and limit, then fetched.lua; see
-- streams/fetch.rs). Adds the delayed jobs due to the queue's streams first. When the next
-- entries to lease are `x`'s (see `next_is_x`), it leaves the read to the `XREADGROUP`, which
-- hands its entries to the client as Redis reads them, without going through Lua: it records
-- in the call's lease `o`, the last entry `x`'s group delivered before, and `n`, how many of
-- `x`'s entries are pending for the worker, and returns 'plain'. Else it reads the first
-- stream that holds entries itself, in the order of `streams` (by priority, `xr` before `x`),
-- writes the call's lease, and returns the entries, each {entry id, {field, value, ...}} as
-- XREADGROUP gives them; then, and when the queue is paused or the call's id is taken, it
-- hides `x` from the `XREADGROUP` (renamed `xhidden`, which fetched.lua names back). One call
-- takes from one stream, so that its entries are the range from its first to its last there,
-- which no other call's overlaps. ARGV[4..]: lease expiry, worker, limit, the call's id (see
-- streams/token.rs), the queue's limits as flow.lua's `read_flow` reads them ('' when the
-- worker knows of none; their last part, the worker's ended leases, empty), the number k of
-- arguments that name the jobs the worker runs, those k (known.lua's pairs; none: every job),
-- then the worker's ended leases of the queue, each its fetch call, entry and job id. The
-- limits lower the call's limit to what they let start; the `XREADGROUP`, whose count is the
-- asked one, reads only when that is the whole limit, the queue has no rate (whose starts this
-- script logs) and no job waits apart (`xapart`: with key limits, or set aside). The jobs the
-- worker runs are looked for only there: the caller sets aside those it read but does not run
-- (aside.lua). Fails with `TAKEN` when another call holding leases has the same id, which the
-- caller draws again. Returns 'plain' (the `XREADGROUP` reads), the entries leased, or, when
-- some were leased beyond the queue's concurrency (reserved, see flow.lua), {'counted', how
-- many of them count, the entries}.
local expiry, worker, asked, call = ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7]
if not x_exists() then
  return {}
end
if redis.call('HGET', BASE .. 'limits', 'pz') == '1' then
  hide_x()
  return {}
end
local flow = read_flow(8)
local known_last = 9 + tonumber(ARGV[9])
local known = known_jobs(10, known_last)
-- The first argument of the ended leases.
local ENDED = known_last + 1

-- The worker's ended leases (ARGV[ENDED..]) under which their jobs still run, as flow.lua's
-- `left_out` counts them: in total and per key. The fence tells them, where the hash layout
-- reads each job's lease; set as `left_out`'s answer for this call.
local function ended_under_leases()
  local out, seen = { total = 0, keys = {} }, {}
  if #ARGV < ENDED then
    return out
  end
  for n, c in ipairs(fenced(ENDED, 3)) do
    local i = ENDED + 3 * (n - 1)
    local id = ARGV[i + 2]
    if c and not seen[id] then
      seen[id] = true
      out.total = out.total + 1
      local entry = ARGV[i + 1]
      local got = c.stream == XASTREAM and redis.call('XRANGE', XASTREAM, entry, entry)[1]
      local k = got and field_of(got[2], 'k')
      if k then
        local key = key_of(k)
        out.keys[key] = (out.keys[key] or 0) + 1
      end
    end
  end
  return out
end

if flow then
  uncounted = ended_under_leases()
end
-- The running jobs that the concurrency counts, as flow.lua's `queue_room` counts them: less
-- those still under one of the worker's ended leases (their handlers run no more) and the
-- reserved ones, plus the places that promoted jobs hold.
local counted = room_under(asked, flow, function()
  return (tonumber(redis.call('HGET', COUNTS, 'r')) or 0) - left_out().total - reserved_count()
    + places_count()
end)
-- A fetch of a queue with a concurrency alone may reserve leases beyond it (see flow.lua).
local may_reserve = flow and flow.reserve > 0 and flow.concurrency and not flow.rate
if counted == 0 and not may_reserve then
  hide_x()
  return {}
end
local lease = call_lease(call)
if redis.call('HSETNX', lease, 'w', worker) == 0 then
  hide_x()
  return redis.error_reply('TAKEN the fetch call id is in use')
end
promote_due(asked)
local rated = flow and flow.rate
-- Jobs with key limits, and those set aside, wait in `xapart`.
local apart = redis.call('EXISTS', XAPART) == 1
-- The first `counted` jobs taken count against the limits; one that reserves, where no job
-- waits apart, takes up to as many more again as its reserve allows, within what it asked for.
local limit = counted
if may_reserve and not apart then
  limit = counted + math.min(flow.reserve + counted, asked - counted)
end
if limit == 0 then
  redis.call('DEL', lease)
  hide_x()
  return finish({})
end
if counted == asked and not rated and not apart and next_is_x() then
  redis.call('HSET', lease, 'o', last_delivered(XSTREAM), 'n', pending_count(XSTREAM, worker))
  return finish('plain')
end

-- The first entry not yet delivered of the queue's streams, in the order fetches read them:
-- {stream, its undelivered entries from there (at most `limit`), its priority}, or nil when
-- every stream is read to its end.
local function plain_head()
  for _, stream in ipairs(streams()) do
    -- `x` is hidden by now.
    local read = stream == XSTREAM and XHIDDEN or stream
    local waiting = redis.call('XRANGE', read, '(' .. last_delivered(read), '+', 'COUNT', limit)
    if #waiting > 0 then
      local p = string.match(string.sub(stream, #BASE + 1), '^xr?:(%-?%d+)$')
      return { stream = stream, waiting = waiting, p = tonumber(p) or DEFAULT_PRIORITY }
    end
  end
  return nil
end

-- The `ready_member` of an entry, to place it among the jobs of `xapart`.
local function member_of(entry)
  local j = field_of(entry[2], 'j') or ''
  return ready_member(unpack_j(j) or 0, string.sub(j, 1, ID_LEN))
end

-- Whether the worker runs the job of `fields` (a `d:<id>` hash's), as known.lua's `takes` says.
local function runs(fields)
  if not known then
    return true
  end
  local _, m = unpack_j(field_of(fields, 'j') or '')
  local v = field_of(fields, 'v')
  return takes(known, { 'm', m or '', 'v', v or '1' })
end

-- The jobs of `xapart` the worker runs and that their keys (if they have key limits) let start
-- now, in order, of those before `bound` (a priority and a member; nil: no bound), at most
-- `limit`, each {member, priority, fields, false, key, key rate period} as flow.lua's
-- `count_key_starts` reads them; when none comes before the bound, the first one after it, as
-- {priority, member}. Looks past at most FLOW_SCAN jobs their keys hold back and KNOWN_SCAN of
-- names or versions the worker does not run.
local function apart_head(bound)
  local picked, keys, held, unknown, from = {}, {}, 0, 0, 0
  while #picked < limit and held < FLOW_SCAN and unknown < KNOWN_SCAN do
    local window = redis.call('ZRANGE', XAPART, from, from + 99, 'WITHSCORES')
    if #window == 0 then
      return picked, nil
    end
    from = from + 100
    for m = 1, #window, 2 do
      local member, p = window[m], window[m + 1]
      local after = bound and not before(member, p, bound[2], bound[1])
      if after and #picked > 0 then
        return picked, nil
      end
      local fields = redis.call('HGETALL', delayed_key(string.sub(member, 15)))
      local k = field_of(fields, 'k')
      local free, key, period = true, nil, nil
      -- A job no longer pending (gone, or cancelled since) is looked past too.
      if field_of(fields, 's') ~= 'p' or not runs(fields) then
        free = false
        unknown = unknown + 1
      elseif k then
        key, period = key_room(keys, k)
        free = key ~= nil
        held = held + (free and 0 or 1)
      end
      if not free then
        -- Looked past.
      elseif after then
        return picked, { p, member }
      else
        picked[#picked + 1] = { member, p, fields, false, key, period }
        if #picked == limit then
          break
        end
      end
    end
  end
  return picked, nil
end

-- Leases the jobs `picked` (see `apart_head`): each an entry of `xa`, read by the worker at
-- once, counted against its key. Returns the entries.
local function take_apart(picked)
  ensure_group(XASTREAM)
  local members = {}
  for n, job in ipairs(picked) do
    local id = string.sub(job[1], 15)
    local entry = redis.call('XADD', XASTREAM, '*', unpack(with_j_first(job[3], { s = true }, {})))
    redis.call('HSET', XIDS, id, 'a' .. entry)
    redis.call('DEL', delayed_key(id))
    members[n] = job[1]
  end
  zrem_all(XAPART, members)
  recount_by('q', #picked)
  local read = redis.call('XREADGROUP', 'GROUP', 'g', worker, 'COUNT', #picked,
    'STREAMS', XASTREAM, '>')
  return read[1][2]
end

hide_x()
local entries, from, picked = {}, nil, {}
if apart then
  -- The jobs go in their merged order: a run of jobs from `xapart` before the first entry not
  -- yet delivered, or a run of entries before the first job from `xapart` that may start.
  local head = plain_head()
  local bound = head and { head.p, member_of(head.waiting[1]) }
  local next_apart
  picked, next_apart = apart_head(bound)
  if #picked > 0 then
    entries, from = take_apart(picked), XASTREAM
  elseif head then
    local count = 0
    for _, entry in ipairs(head.waiting) do
      if next_apart and not before(member_of(entry), head.p, next_apart[2], next_apart[1]) then
        break
      end
      count = count + 1
    end
    local stream = head.stream == XSTREAM and XHIDDEN or head.stream
    entries = redis.call('XREADGROUP', 'GROUP', 'g', worker, 'COUNT', count,
      'STREAMS', stream, '>')[1][2]
    from = head.stream
  end
else
  for _, stream in ipairs(streams()) do
    if stream == XSTREAM then
      stream = XHIDDEN
    end
    local read = redis.call('XREADGROUP', 'GROUP', 'g', worker, 'COUNT', limit,
      'STREAMS', stream, '>')
    if read then
      entries, from = read[1][2], stream
      break
    end
  end
  if from == XHIDDEN then
    from = XSTREAM
  end
end
if not from then
  redis.call('DEL', lease)
  return finish({})
end
local tag = call .. '-' .. entries[1][1]
record_lease(lease, call, worker, expiry, from, entries[1][1], entries[#entries][1], #entries)
if from == XASTREAM then
  count_key_starts(picked, tag)
end
if rated then
  log_starts(STARTS, tag, #entries, flow.period)
end
if #entries > counted then
  -- Leased beyond the concurrency: reserved, each until its lease's expiry.
  local reserved = {}
  for n = counted + 1, #entries do
    reserved[#reserved + 1] = expiry
    reserved[#reserved + 1] = reserved_member(from, entries[n][1])
  end
  bulk('ZADD', RESERVED, reserved, 1000)
  return finish({ 'counted', counted, entries })
end
return finish(entries)
