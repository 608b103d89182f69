-- Storing new jobs (enqueue, cron).
--
-- A job's arguments: id, its ready-set member ('' when it is scheduled, 'w' when it is a
-- workflow step stored waiting: in no set but `all`, see effects.lua), payload, its flow
-- ('' when it has neither key limits nor a coalesce key, see coalesce.lua), a count n, then n
-- arguments: the values of the hash's fields `pr`, `ra` and `m`, in that order, then the
-- other fields' names and values, `u` first if it has a unique key, then any others (`v`, its
-- payload version when not 1, `k`, its key limits, and `wf`, its workflow step, among them),
-- and last `tg` if it has tags. The script adds the names of the first three, the status,
-- created_at and the payload (see `payload_cut`) to the hash.
--
-- A call's mode says what to do when the queue has a max depth (`md` in its limits hash):
-- 's' stores the jobs unless the new ones would overfill the queue; 'p' (the call holds only
-- part of the queue's jobs of an enqueue) stores nothing and answers 'bounded', so the caller
-- sends them again in one call; 'c' only checks whether they would fit and stores nothing.
-- Without a max depth, 's' and 'p' store and 'c' checks nothing.

local LIMITS
on_base(function()
  LIMITS = BASE .. 'limits'
end)

-- The index of the last argument of the job starting at ARGV[s], its unique key and its tags
-- (each nil when it has none).
local function job_args(s)
  local last = s + 4 + tonumber(ARGV[s + 4])
  local ukey, tags = nil, nil
  if last > s + 7 and ARGV[s + 8] == 'u' then
    ukey = ARGV[s + 9]
  end
  if ARGV[last - 1] == 'tg' then
    tags = ARGV[last]
  end
  return last, ukey, tags
end

-- Adds job `id` to the index of each of its `tags` (a JSON array).
local function index_tags(id, tags)
  if tags then
    for _, tag in ipairs(cjson.decode(tags)) do
      redis.call('ZADD', TAG .. tag, '0', id)
    end
  end
end

-- Writes the job starting at ARGV[s] (its arguments ending at ARGV[last]): its hash, holding
-- its payload when it fits (see `payload_cut`); a longer payload goes to its payload key, or
-- into `payloads` (key and value pairs, for one MSET), when given.
local function write_job(s, last, status, payloads)
  local id, payload = ARGV[s], ARGV[s + 2]
  local cut = payload_cut(payload)
  if cut == #payload then
    redis.call('HSET', job_key(id), 's', status, 'c', NOW_S, 'p', payload, 'pr', ARGV[s + 5],
      'ra', ARGV[s + 6], 'm', ARGV[s + 7], unpack(ARGV, s + 8, last))
    return
  elseif cut then
    redis.call('HSET', job_key(id), 's', status, 'c', NOW_S, 'p', string.sub(payload, 1, cut),
      'p2', string.sub(payload, cut + 1), 'pr', ARGV[s + 5], 'ra', ARGV[s + 6], 'm', ARGV[s + 7],
      unpack(ARGV, s + 8, last))
    return
  end
  redis.call('HSET', job_key(id), 's', status, 'c', NOW_S, 'pr', ARGV[s + 5], 'ra', ARGV[s + 6],
    'm', ARGV[s + 7], unpack(ARGV, s + 8, last))
  if payloads then
    payloads[#payloads + 1] = side_key('p', id)
    payloads[#payloads + 1] = payload
  else
    redis.call('SET', side_key('p', id), payload)
  end
end

-- Whether `new` more waiting jobs would take the queue beyond its max depth `md` (text; nil:
-- unbounded). The depth is the pending and scheduled jobs.
local function overfills(md, new)
  if not md or new == 0 then
    return false
  end
  local c = redis.call('HMGET', COUNTS, 'p', 's')
  return (tonumber(c[1]) or 0) + (tonumber(c[2]) or 0) + new > tonumber(md)
end

-- The longest payload sent to an idle worker straight away: a longer one waits to be fetched,
-- so that no delivery fills the subscribers' output buffer (Redis drops a subscriber whose
-- buffer passes 8 MB for a minute).
local DELIVER_MAX = 65536

-- Leases the job starting at ARGV[s] (its arguments ending at ARGV[last], `tags` its tags),
-- pending and ready now, straight to an idle worker that runs it, if one offers (see
-- idle.lua), and publishes it on the worker's delivery channel as a fetch returns a job: its
-- hash before the lease, and its payload. Whether it did.
local function hand_over(s, last, tags)
  local worker, token, expiry, channel = take_offer(s, last)
  if not worker then
    return false
  end
  local id = ARGV[s]
  write_job(s, last, 'r')
  redis.call('HSET', job_key(id), 'a', '1', 'st', NOW_S, 'w', worker, 'l', token .. ':' .. expiry)
  redis.call('ZADD', RUNNING, expiry, id)
  index_tags(id, tags)
  recount_by('r', 1)
  local fields = {
    's', 'p', 'c', NOW_S, 'pr', ARGV[s + 5], 'ra', ARGV[s + 6], 'm', ARGV[s + 7],
    unpack(ARGV, s + 8, last),
  }
  redis.call('PUBLISH', channel, cjson.encode({
    w = worker, q = QUEUE, i = id, t = token, x = expiry, f = fields, p = ARGV[s + 2],
  }))
  return true
end

-- The answer of a call: its code, the max depth ('' if none) and the duplicates.
local function answer(code, md, held)
  return { code, md or '', held }
end

-- Stores the job starting at ARGV[s], the only one of its call and without flow (`md` the
-- queue's max depth, nil if none; `direct`: the queue is neither paused nor limited, so an
-- idle worker may take the job straight away): as `store_jobs`, in the fewest commands (six
-- in all with the limits' HMGET and the counts, seven with the wake-up, one more for a payload
-- too long for the hash, two more for a bounded queue, one more to look for idle workers' offers
-- when the ready set is empty).
local function store_one(s, md, direct)
  local id = ARGV[s]
  local last, ukey, tags = job_args(s)
  if ukey then
    local holder = redis.call('HGET', UNIQUE, ukey)
    if holder then
      return answer('ok', md, { { 1, holder } }), false
    end
  end
  if md and redis.call('ZSCORE', ALL, id) then
    return answer('ok', md, {}), false
  end
  if overfills(md, 1) then
    return answer('full', md, {}), false
  end
  -- Adding the id to the set of all jobs also tells whether it exists.
  if redis.call('ZADD', ALL, 'NX', '0', id) == 0 then
    return answer('ok', md, {}), false
  end
  if ukey then
    redis.call('HSET', UNIQUE, ukey, id)
  end
  local member, status, wakes = ARGV[s + 1], 'p', false
  if member == 'w' then
    status = 'w'
  elseif member ~= '' then
    wakes = none_ready()
    if wakes and direct and #ARGV[s + 2] <= DELIVER_MAX and hand_over(s, last, tags) then
      return answer('ok', md, {}), false
    end
    redis.call('ZADD', READY, ARGV[s + 5], member)
  else
    status = 's'
    redis.call('ZADD', DELAYED, ARGV[s + 6], id)
  end
  write_job(s, last, status)
  index_tags(id, tags)
  recount_by(status, 1)
  return answer('ok', md, {}), wakes
end

-- Whether the job starting at ARGV[s] is plain: neither a flow nor a field beyond `pr`, `ra`
-- and `m` (no unique key, tags, version, trace context, key limits or workflow step), as most
-- jobs of a bulk enqueue are. Storing one takes none of the lookups the others may need.
local function plain(s)
  return ARGV[s + 4] == '3' and ARGV[s + 3] == ''
end

-- The fate of a new plain job (see `fates`).
local PLAIN = { 'new' }

-- The fate of the job starting at ARGV[s], not plain (see `fates`): `fresh` when its id is
-- neither stored nor taken by an earlier job of the call, `unique` and `taken` the unique and
-- coalesce keys that the call's earlier new jobs hold.
local function fate_of(s, fresh, unique, taken)
  local id = ARGV[s]
  local last, ukey, tags = job_args(s)
  local holder = ukey and (unique[ukey] or redis.call('HGET', UNIQUE, ukey))
  if holder then
    return { 'dup', holder }
  elseif not fresh then
    return nil
  end
  local _, mode, _, key = job_flow(ARGV[s + 3])
  holder = mode and (taken[mode .. key] or coalesce_holder(mode, key))
  if holder then
    return { mode == 'd' and 'deb' or 'dup', holder }
  end
  if ukey then
    unique[ukey] = id
  end
  if mode then
    taken[mode .. key] = id
  end
  return { 'new', last, ukey, tags }
end

-- What becomes of each job of the call, the earlier ones counting as stored: nil (its id
-- exists: left as it is), {'dup', holder} (a duplicate of the holder of its unique or throttle
-- key), {'deb', holder} (folded into its debounce key's waiting job), PLAIN (new, plain) or
-- {'new', last, unique key, tags} (new, as `job_args` gives them); and how many are new.
local function fates(starts, ids)
  local known = bulk('ZMSCORE', ALL, ids, 1000)
  local out, seen, unique, taken, new = {}, {}, {}, {}, 0
  for j, s in ipairs(starts) do
    local id = ARGV[s]
    local fresh = not known[j] and not seen[id]
    local fate = nil
    if not plain(s) then
      fate = fate_of(s, fresh, unique, taken)
    elseif fresh then
      fate = PLAIN
    end
    if fate and fate[1] == 'new' then
      new = new + 1
      seen[id] = true
    end
    out[j] = fate
  end
  return out, new
end

-- Stores the jobs whose arguments run from ARGV[first] to ARGV[last] (nil: the end), in mode
-- `mode` (see
-- above). A job whose id exists is left as it is, one whose unique key an active job holds or
-- that a throttle key holds is not stored, and one whose debounce key a waiting job holds is
-- folded into that job. Returns the answer: its code ('ok', 'bounded' or 'full'), the max
-- depth and a {batch index (from 1), holder id} pair for each duplicate; and whether the
-- queue's workers are to be woken (a ready set went from empty to not, or a job became ready).
--
-- Per job: one HSET; the long payloads, the sets' additions and the counts go in one call each.
local function store_jobs(first, mode, last)
  last = last or #ARGV
  -- `lm`: the queue has a concurrency or a rate; `pz`: it is paused (see flow.rs, paused.rs).
  local md, limited, paused = unpack(redis.call('HMGET', LIMITS, 'md', 'lm', 'pz'))
  if md and mode == 'p' then
    return answer('bounded', md, {}), false
  end
  local starts, ids = {}, {}
  local i = first
  while i <= last do
    starts[#starts + 1] = i
    ids[#ids + 1] = ARGV[i]
    i = i + 5 + tonumber(ARGV[i + 4])
  end
  if #ids == 1 and ARGV[first + 3] == '' and mode ~= 'c' then
    return store_one(first, md, not limited and not paused)
  end
  local fate, new = fates(starts, ids)
  if overfills(md, new) then
    return answer('full', md, {}), false
  end
  if mode == 'c' then
    return answer('ok', md, {}), false
  end
  local held = {}
  local all, ready, kready, delayed, payloads, waiting = {}, {}, {}, {}, {}, 0
  for j, s in ipairs(starts) do
    local id = ARGV[s]
    local f = fate[j]
    if f and f[1] ~= 'new' then
      held[#held + 1] = { j, f[2] }
    elseif f then
      local last, keyed = s + 7, false
      if f ~= PLAIN then
        local _, ukey, tags, mode_c, window, key
        _, last, ukey, tags = unpack(f)
        keyed, mode_c, window, key = job_flow(ARGV[s + 3])
        if ukey then
          redis.call('HSET', UNIQUE, ukey, id)
        end
        if mode_c then
          hold_key(mode_c, key, window, id)
        end
        index_tags(id, tags)
      end
      all[#all + 1] = '0'
      all[#all + 1] = id
      local member, status = ARGV[s + 1], 'p'
      if member == 'w' then
        status = 'w'
        waiting = waiting + 1
      elseif member == '' then
        status = 's'
        delayed[#delayed + 1] = ARGV[s + 6]
        delayed[#delayed + 1] = id
      elseif keyed then
        kready[#kready + 1] = ARGV[s + 5]
        kready[#kready + 1] = member
      else
        ready[#ready + 1] = ARGV[s + 5]
        ready[#ready + 1] = member
      end
      write_job(s, last, status, payloads)
    end
  end
  local wakes = (#ready > 0 and none_ready())
    or (#kready > 0 and redis.call('ZCARD', KREADY) == 0)
  bulk('MSET', nil, payloads, 1000)
  bulk('ZADD', ALL, all, 1000)
  bulk('ZADD', READY, ready, 1000)
  bulk('ZADD', KREADY, kready, 1000)
  bulk('ZADD', DELAYED, delayed, 1000)
  recount_by('p', (#ready + #kready) / 2)
  recount_by('s', #delayed / 2)
  recount_by('w', waiting)
  -- Debounced jobs last, in batch order: one may fold into a job of this very call.
  for j, s in ipairs(starts) do
    local f = fate[j]
    if f and f[1] == 'deb' then
      wakes = debounce(s, f[2]) or wakes
    end
  end
  return answer('ok', md, held), wakes
end
