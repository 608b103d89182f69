-- Shared head of every script (prepended at build time).
--
-- A script works on one queue. KEYS[1] is the queue's key base `{prefix:queue}:`; every key a
-- script touches is that base plus a suffix, so all of them share one hash tag and one cluster
-- slot. ARGV[1] is the wake-up channel, ARGV[2] the queue's name, ARGV[3] the current time in
-- microseconds since the epoch; each script's own arguments start at ARGV[4].
--
-- Keys of a queue:
--   j:<id>   hash, one job's short fields (see record.rs), kept in Redis' compact listpack
--   p:<id>   string, its payload
--   r:<id>   string, its result when longer than LONG bytes (shorter ones stay in the hash)
--   e:<id>   list, the error of each failed attempt: `attempt:at:message`
--   ready    zset, score priority, member hex14(run_at) .. id: priority, then run_at, then FIFO
--   delayed  zset, score run_at, member id: waiting for a future run_at
--   running  zset, score lease expiry, member id
--   done     zset, score finished_at, member id: completed and cancelled, for retention
--   dead     zset, score 0, member id: the dead-letter set, by id
--   all      zset, score 0, member id: every job, by id (ids are time-ordered), for listing
--   counts   hash, status code (s p r c d x) -> number of jobs
--   unique   hash, unique key -> id of the active job holding it
--   cron     hash, schedule -> last tick stored (microseconds)
local BASE = KEYS[1]
local CHANNEL, QUEUE, NOW_S = ARGV[1], ARGV[2], ARGV[3]
local NOW = tonumber(NOW_S)
local READY = BASE .. 'ready'
local DELAYED = BASE .. 'delayed'
local RUNNING = BASE .. 'running'
local DONE = BASE .. 'done'
local DEAD = BASE .. 'dead'
local ALL = BASE .. 'all'
local COUNTS = BASE .. 'counts'
local UNIQUE = BASE .. 'unique'
local CRON = BASE .. 'cron'

-- Values longer than this (Redis' default hash-max-listpack-value) would turn a job's hash from
-- the compact listpack encoding into a hashtable, several times larger.
local LONG = 64

local function job_key(id)
  return BASE .. 'j:' .. id
end

-- The key of job `id`'s payload ('p'), long result ('r') or errors ('e').
local function side_key(kind, id)
  return BASE .. kind .. ':' .. id
end

-- What a fetch hands out of job `id`: its hash, payload and errors (a running job has no
-- result).
local function read(key, id)
  local fields = redis.call('HGETALL', key)
  local errors = {}
  for j = 1, #fields, 2 do
    if fields[j] == 'ne' then
      errors = redis.call('LRANGE', side_key('e', id), 0, -1)
      break
    end
  end
  return { fields, redis.call('GET', side_key('p', id)), errors }
end

-- Deletes job `id` and its side keys.
local function delete_job(key, id)
  redis.call('DEL', key, side_key('p', id), side_key('r', id), side_key('e', id))
end

-- Integers go to Redis as decimal text (Lua would print large ones as %.14g).
local function int(n)
  return string.format('%d', n)
end

-- The ready-set member: the run_at as 14 hex digits, then the time-ordered id.
local function ready_member(run_at, id)
  return string.format('%014x', math.max(tonumber(run_at), 0)) .. id
end

-- Status counts change in this table and reach Redis once per script, in `finish`.
local deltas = {}

local function recount(from, to)
  if from then
    deltas[from] = (deltas[from] or 0) - 1
  end
  if to then
    deltas[to] = (deltas[to] or 0) + 1
  end
end

-- Writes the status counts and returns `value`: every script returns through it.
local function finish(value)
  for status, delta in pairs(deltas) do
    if delta ~= 0 then
      redis.call('HINCRBY', COUNTS, status, delta)
    end
  end
  return value
end

-- Removes `ids` from sorted set `key`, a few hundred per call (Lua's unpack is bounded).
local function zrem_all(key, ids)
  for from = 1, #ids, 500 do
    redis.call('ZREM', key, unpack(ids, from, math.min(from + 499, #ids)))
  end
end

local function wake()
  redis.call('PUBLISH', CHANNEL, QUEUE)
end

-- Frees unique key `u` (if any) when job `id` holds it.
local function release_unique(u, id)
  if u and redis.call('HGET', UNIQUE, u) == id then
    redis.call('HDEL', UNIQUE, u)
  end
end

local function clear_lease(key, id)
  redis.call('HDEL', key, 'w', 'k', 'le')
  redis.call('ZREM', RUNNING, id)
end

-- The key and unique key of job `id` if it is running under the lease `token`, else nil.
local function leased(id, token)
  local key = job_key(id)
  local v = redis.call('HMGET', key, 's', 'k', 'u')
  if v[1] == 'r' and v[2] == token then
    return key, v[3]
  end
  return nil
end

-- Takes a job in status `s` out of the sets of that status (and frees its unique key).
local function unindex(key, id, s)
  if s == 'p' or s == 's' then
    redis.call('ZREM', READY, ready_member(redis.call('HGET', key, 'ra'), id))
    redis.call('ZREM', DELAYED, id)
  elseif s == 'r' then
    redis.call('ZREM', RUNNING, id)
  elseif s == 'c' or s == 'x' then
    redis.call('ZREM', DONE, id)
  elseif s == 'd' then
    redis.call('ZREM', DEAD, id)
  end
  release_unique(redis.call('HGET', key, 'u'), id)
  recount(s, nil)
end

-- Ends the running attempt of job `id` with an error: pending again at `retry_at` (text), or
-- dead when it is nil. Returns true when the job is ready at once.
local function finish_attempt(key, id, message, retry_at)
  local v = redis.call('HMGET', key, 'a', 'pr', 'u')
  local n = redis.call('RPUSH', side_key('e', id), v[1] .. ':' .. NOW_S .. ':' .. message)
  clear_lease(key, id)
  if retry_at then
    redis.call('HSET', key, 's', 'p', 'ra', retry_at, 'ne', n)
    recount('r', 'p')
    if tonumber(retry_at) <= NOW then
      redis.call('ZADD', READY, v[2], ready_member(retry_at, id))
      return true
    end
    redis.call('ZADD', DELAYED, retry_at, id)
    return false
  end
  redis.call('HSET', key, 's', 'd', 'f', NOW_S, 'ne', n)
  redis.call('ZADD', DEAD, 0, id)
  recount('r', 'd')
  release_unique(v[3], id)
  return false
end

-- Moves delayed jobs whose run_at has come into the ready set (at most `limit`): scheduled
-- jobs become pending, so every job in the ready set is pending.
local function promote(limit)
  local due = redis.call('ZRANGEBYSCORE', DELAYED, '-inf', NOW_S, 'LIMIT', 0, limit)
  if #due == 0 then
    return
  end
  for _, id in ipairs(due) do
    local key = job_key(id)
    local v = redis.call('HMGET', key, 'pr', 'ra', 's')
    if v[1] then
      redis.call('ZADD', READY, v[1], ready_member(v[2], id))
      if v[3] == 's' then
        redis.call('HSET', key, 's', 'p')
        recount('s', 'p')
      end
    end
  end
  zrem_all(DELAYED, due)
end

-- Stores the job whose arguments start at ARGV[i]: id, unique key ('' for none, else '=' and
-- the key), priority, run_at, payload, a count n, then n field/value pairs. Returns the stored
-- id (the holder's for a held unique key), 1 for such a duplicate else 0, the index of the next
-- job's arguments, and whether the new job is ready.
local function insert(i)
  local id, u, pr, ra = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local first = i + 6
  local nxt = first + 2 * tonumber(ARGV[i + 5])
  local ukey = nil
  if u ~= '' then
    ukey = string.sub(u, 2)
    local holder = redis.call('HGET', UNIQUE, ukey)
    if holder then
      return holder, 1, nxt, false
    end
  end
  local key = job_key(id)
  if redis.call('EXISTS', key) == 1 then
    return id, 0, nxt, false
  end
  local ready = tonumber(ra) <= NOW
  local status = ready and 'p' or 's'
  local fields = { 's', status, 'c', NOW_S, 'pr', pr, 'ra', ra }
  if ukey then
    fields[#fields + 1] = 'u'
    fields[#fields + 1] = ukey
    redis.call('HSET', UNIQUE, ukey, id)
  end
  for k = first, nxt - 1 do
    fields[#fields + 1] = ARGV[k]
  end
  redis.call('HSET', key, unpack(fields))
  redis.call('SET', side_key('p', id), ARGV[i + 4])
  if ready then
    redis.call('ZADD', READY, pr, ready_member(ra, id))
  else
    redis.call('ZADD', DELAYED, ra, id)
  end
  redis.call('ZADD', ALL, 0, id)
  recount(nil, status)
  return id, 0, nxt, ready
end
