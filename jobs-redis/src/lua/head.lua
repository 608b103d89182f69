-- The head of the library of functions (see scripts.rs), followed by the shared parts: idle.lua,
-- coalesce.lua, store.lua, lease.lua, effects.lua, promote.lua, known.lua, flow.lua,
-- states.lua, filter.lua, presence.lua, streams/keys.lua, in that order; then each script's own file, as the
-- body of the function registered for it, which begins with `begin(keys, args)`. Redis runs
-- the library's text once, when it is loaded: the parts' functions are defined once, not per
-- call.
--
-- A script works on one queue. KEYS[1] is the queue's key base `{prefix:queue}:`; every key a
-- script touches is that base plus a suffix, so all of them share one hash tag and one cluster
-- slot (but for workflow steps on one server: enqueue_all.lua stores a batch across queues,
-- and effects.lua reaches a step of another queue). ARGV[1] is the wake-up channel, ARGV[2] the queue's name, ARGV[3] the current time in
-- microseconds since the epoch; each script's own arguments start at ARGV[4]. The presence
-- scripts (heartbeat.lua, deregister.lua, workers.lua) work on the prefix's own keys instead:
-- their KEYS[1] is `{prefix}:` and their ARGV[2] is empty.
--
-- Keys of a queue:
--   j:<id>     hash, one job's short fields (see record.rs), kept in Redis' compact listpack,
--              its payload among them when it fits (see `payload_cut`): in field `p`, or cut
--              in two, its first part in `p` and the rest in `p2`
--   p:<id>     string, its payload when it does not fit in the hash
--   r:<id>     string, its result when longer than LONG bytes (shorter ones stay in the hash)
--   e:<id>     list, the error of each failed attempt, as JSON:
--              {"a":attempt,"t":at,"kind":...,"message":...,"chain":[...]} (before kinds were
--              kept: `attempt:at:message`)
--   ready      zset, score priority, member hex14(run_at) .. id: priority, then run_at, then FIFO
--   kready     zset, as ready, of the ready jobs with key limits (only a flow fetch takes them)
--   delayed    zset, score run_at, member id: waiting for a future run_at
--   running    zset, score lease expiry, member id
--   done       zset, score finished_at, member the ids (ID_LEN hex digits each, one after the
--              other) of the jobs one call finished then: completed and cancelled, for
--              retention; a job's member is found by its `f` field, which is the score
--   dead       zset, score 0, member id: the dead-letter set, by id
--   all        zset, score 0, member id: every job, by id (ids are time-ordered), for listing
--   tag:<tag>  zset, score 0, member id: the jobs carrying the tag, by id
--   counts     hash, status code (w s p r c d x) -> number of jobs
--   unique     hash, unique key -> id of the active job holding it
--   cron       hash, schedule -> last tick stored (microseconds)
--   limits     hash, `md` -> the queue's max depth (absent: unbounded); `lm` -> 1 while it has a
--              concurrency or a rate, `pz` -> 1 while it is paused (no job goes straight to an idle
--              worker then)
--   krun       hash, key -> running jobs of the key (jobs with key limits only)
--   reserved   zset, score lease expiry, member id: running jobs leased beyond the concurrency
--   places     hash, worker -> places its promoted jobs hold under the concurrency
--   starts     zset, score start time, member fetch token prefix:n: the queue's starts
--   kstarts:<key>  zset, as starts, of one key (jobs whose key limits have a rate)
--   th:<key>   string, `until:id`: the job holding a throttle key, and until when
--   debounce   hash, debounce key -> the job that took it last (it holds it while waiting)
--   idle       zset, score until when, member worker: idle workers' offers (see idle.lua)
--   idle:<worker>  hash, one worker's offer: its places, tokens, lease and the jobs it runs
-- A call's arguments and what follows from them, set by `begin`. They live on between calls
-- (the library's state is Redis' own), so every part keeps what is a call's own in variables
-- that `begin` sets again: key names in an `on_base` hook, anything else in an `on_call` one.
local ARGV
local BASE, CHANNEL, QUEUE, NOW_S, NOW
local READY, KREADY, DELAYED, RUNNING, DONE, DEAD, ALL, COUNTS, UNIQUE, CRON, KRUN, RESERVED
local PLACES, TAG

-- Status counts change in this table and reach Redis once per call, in `finish`.
local deltas = {}

local base_hooks, call_hooks = {}, {}

-- Has `hook` derive a part's key names from BASE whenever a call's key base changes.
local function on_base(hook)
  base_hooks[#base_hooks + 1] = hook
end

-- Has `hook` reset a part's own state at the start of every call.
local function on_call(hook)
  call_hooks[#call_hooks + 1] = hook
end

-- Points the key names at key base `base`: they stay as they are while calls work on one queue.
local function use_base(base)
  if base == BASE then
    return
  end
  BASE = base
  READY = base .. 'ready'
  KREADY = base .. 'kready'
  DELAYED = base .. 'delayed'
  RUNNING = base .. 'running'
  DONE = base .. 'done'
  DEAD = base .. 'dead'
  ALL = base .. 'all'
  COUNTS = base .. 'counts'
  UNIQUE = base .. 'unique'
  CRON = base .. 'cron'
  KRUN = base .. 'krun'
  RESERVED = base .. 'reserved'
  PLACES = base .. 'places'
  TAG = base .. 'tag:'
  for _, hook in ipairs(base_hooks) do
    hook()
  end
end

-- Starts a call with key names `keys` and arguments `args`.
local function begin(keys, args)
  ARGV = args
  CHANNEL, QUEUE, NOW_S = args[1], args[2], args[3]
  NOW = tonumber(NOW_S)
  use_base(keys[1])
  deltas = {}
  for _, hook in ipairs(call_hooks) do
    hook()
  end
end

-- Values longer than this (Redis' default hash-max-listpack-value) would turn a job's hash from
-- the compact listpack encoding into a hashtable, several times larger.
local LONG = 64

-- The length of a job's id as stored: a UUID's 32 hex digits.
local ID_LEN = 32

-- Where a payload is cut between the hash's fields `p` and `p2`: the length of its part in `p`
-- (all of it when at most LONG bytes; else at most LONG, before a character's first byte, so
-- that each part is UTF-8 text), or nil when the rest would be longer than LONG too: such a
-- payload has a key of its own.
local function payload_cut(payload)
  local n = #payload
  if n <= LONG then
    return n
  end
  local cut = LONG
  local b = string.byte(payload, cut + 1)
  while b >= 128 and b < 192 and cut > 1 do
    cut = cut - 1
    b = string.byte(payload, cut + 1)
  end
  if n - cut > LONG then
    return nil
  end
  return cut
end

local function job_key(id)
  return BASE .. 'j:' .. id
end

-- The key of job `id`'s payload ('p'), long result ('r') or errors ('e').
local function side_key(kind, id)
  return BASE .. kind .. ':' .. id
end

-- Integers go to Redis as decimal text (Lua would print large ones as %.14g).
local function int(n)
  return string.format('%d', n)
end

-- The value of `name` in a flat field/value list (as HGETALL gives a hash, or a stream entry's
-- fields), or nil.
local function field_of(fields, name)
  for k = 1, #fields, 2 do
    if fields[k] == name then
      return fields[k + 1]
    end
  end
  return nil
end

-- The ready-set member: the run_at as 14 hex digits, then the time-ordered id.
local function ready_member(run_at, id)
  return string.format('%014x', math.max(tonumber(run_at), 0)) .. id
end

-- The ready set of a job whose `k` field (key limits) is `k` (nil or false when it has none).
local function ready_of(k)
  if k then
    return KREADY
  end
  return READY
end

-- The last of four `|`-separated parts of `text` (which may itself hold `|`), or nil when it
-- has fewer.
local function fourth_part(text)
  return string.match(text, '^[^|]*|[^|]*|[^|]*|(.*)$')
end

-- The key of key limits `k` (the `k` field: `concurrency|rate limit|rate period ms|key`).
local function key_of(k)
  return fourth_part(k)
end

-- The job's name in its `m` field (`max attempts|backoff|timeout|name`).
local function meta_name(m)
  return fourth_part(m)
end

local function recount(from, to)
  if from then
    deltas[from] = (deltas[from] or 0) - 1
  end
  if to then
    deltas[to] = (deltas[to] or 0) + 1
  end
end

local function recount_by(status, n)
  deltas[status] = (deltas[status] or 0) + n
end

-- Writes the status counts and returns `value`: every call returns through it.
local function finish(value)
  for status, delta in pairs(deltas) do
    if delta ~= 0 then
      redis.call('HINCRBY', COUNTS, status, delta)
    end
  end
  return value
end

-- Calls `command` with `key` (unless nil) and the elements of `args`, at most `step` of them
-- per call (Lua's unpack is bounded); returns the replies' elements, concatenated.
local function bulk(command, key, args, step)
  local replies = {}
  for from = 1, #args, step do
    local last = math.min(from + step - 1, #args)
    local reply
    if key then
      reply = redis.call(command, key, unpack(args, from, last))
    else
      reply = redis.call(command, unpack(args, from, last))
    end
    if type(reply) == 'table' then
      for _, r in ipairs(reply) do
        replies[#replies + 1] = r
      end
    end
  end
  return replies
end

-- Removes `ids` from sorted set `key`, a few hundred per call.
local function zrem_all(key, ids)
  bulk('ZREM', key, ids, 500)
end

-- Wakes the queue's idle workers. A worker sleeps only after a fetch found the ready set empty,
-- so a job entering a ready set that holds others needs no signal: an enqueue publishes only
-- into an empty one (under load, enqueues cost no fan-out), while a job that becomes ready any
-- other way (retry, release, rescue) always publishes, and so do promoted jobs left over by the
-- fetch that promoted them.
local function wake()
  redis.call('PUBLISH', CHANNEL, QUEUE)
end

-- Whether the ready set is empty: an enqueue asks before adding to it.
local function none_ready()
  return redis.call('ZCARD', READY) == 0
end

-- The retention a prune call applies: ARGV[4] keep at most this many finished jobs ('' for no
-- count limit), ARGV[5] remove those finished before this time ('' for no age limit), ARGV[6]
-- at most this many per call. Returns the most it may remove, how many finished jobs are
-- beyond the count (0 without one) and the time before which they are beyond it (nil without
-- one); nil when it removes nothing.
local function retention()
  if ARGV[4] == '' and ARGV[5] == '' then
    return nil
  end
  local limit = tonumber(ARGV[6])
  if limit < 1 then
    return nil
  end
  local over = 0
  if ARGV[4] ~= '' then
    local c = redis.call('HMGET', COUNTS, 'c', 'x')
    over = math.max((tonumber(c[1]) or 0) + (tonumber(c[2]) or 0) - tonumber(ARGV[4]), 0)
  end
  local before = nil
  if ARGV[5] ~= '' then
    before = tonumber(ARGV[5])
  end
  return limit, over, before
end
