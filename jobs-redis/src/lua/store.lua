-- Storing new jobs (enqueue, cron).
--
-- A job's arguments: id, its ready-set member ('' when it is scheduled), payload, a count n,
-- then n arguments: the hash's fields and values, first `pr`, `ra`, `m`, then `u` if it has a
-- unique key, then any others, and last `tg` if it has tags. The script adds the status and
-- created_at to the hash.

-- The index of the last argument of the job starting at ARGV[s], its unique key and its tags
-- (each nil when it has none).
local function job_args(s)
  local last = s + 3 + tonumber(ARGV[s + 3])
  local ukey, tags = nil, nil
  if last > s + 9 and ARGV[s + 10] == 'u' then
    ukey = ARGV[s + 11]
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
      redis.call('ZADD', TAG .. tag, 0, id)
    end
  end
end

-- Writes the hash of the job starting at ARGV[s] (its arguments ending at ARGV[last]).
local function write_job(s, last, status)
  redis.call('HSET', job_key(ARGV[s]), 's', status, 'c', NOW_S, unpack(ARGV, s + 4, last))
end

-- Stores the job starting at ARGV[s], the only one of its call: as `store_jobs`, in the fewest
-- commands (six in all with the counts, seven with the wake-up).
local function store_one(s)
  local id = ARGV[s]
  local last, ukey, tags = job_args(s)
  if ukey then
    local holder = redis.call('HGET', UNIQUE, ukey)
    if holder then
      return { { 1, holder } }, false
    end
  end
  -- Adding the id to the set of all jobs also tells whether it exists.
  if redis.call('ZADD', ALL, 'NX', 0, id) == 0 then
    return {}, false
  end
  if ukey then
    redis.call('HSET', UNIQUE, ukey, id)
  end
  local member, status, wakes = ARGV[s + 1], 'p', false
  if member ~= '' then
    wakes = none_ready()
    redis.call('ZADD', READY, ARGV[s + 5], member)
  else
    status = 's'
    redis.call('ZADD', DELAYED, ARGV[s + 7], id)
  end
  write_job(s, last, status)
  index_tags(id, tags)
  redis.call('SET', side_key('p', id), ARGV[s + 2])
  recount_by(status, 1)
  return {}, wakes
end

-- Stores the jobs whose arguments run from ARGV[first] to the end. A job whose id exists is
-- left as it is, and one whose unique key an active job holds is not stored. Returns a {batch
-- index (from 1), holder id} pair for each of the latter, and whether the ready set went from
-- empty to not (so the caller wakes the queue's workers).
--
-- Per job: one HSET; the payloads, the sets' additions and the counts go in one call each.
local function store_jobs(first)
  local starts, ids = {}, {}
  local i = first
  while i <= #ARGV do
    starts[#starts + 1] = i
    ids[#ids + 1] = ARGV[i]
    i = i + 4 + tonumber(ARGV[i + 3])
  end
  if #ids == 1 then
    return store_one(first)
  end
  -- Which ids exist already, in one call.
  local known = bulk('ZMSCORE', ALL, ids, 1000)
  local held, seen = {}, {}
  local all, ready, delayed, payloads = {}, {}, {}, {}
  for j, s in ipairs(starts) do
    local id = ARGV[s]
    local last, ukey, tags = job_args(s)
    local holder = ukey and redis.call('HGET', UNIQUE, ukey)
    if holder then
      held[#held + 1] = { j, holder }
    elseif not known[j] and not seen[id] then
      seen[id] = true
      if ukey then
        redis.call('HSET', UNIQUE, ukey, id)
      end
      all[#all + 1] = 0
      all[#all + 1] = id
      local member, status = ARGV[s + 1], 'p'
      if member ~= '' then
        ready[#ready + 1] = ARGV[s + 5]
        ready[#ready + 1] = member
      else
        status = 's'
        delayed[#delayed + 1] = ARGV[s + 7]
        delayed[#delayed + 1] = id
      end
      write_job(s, last, status)
      index_tags(id, tags)
      payloads[#payloads + 1] = side_key('p', id)
      payloads[#payloads + 1] = ARGV[s + 2]
    end
  end
  local wakes = #ready > 0 and none_ready()
  bulk('MSET', nil, payloads, 1000)
  bulk('ZADD', ALL, all, 1000)
  bulk('ZADD', READY, ready, 1000)
  bulk('ZADD', DELAYED, delayed, 1000)
  recount_by('p', #ready / 2)
  recount_by('s', #delayed / 2)
  return held, wakes
end
