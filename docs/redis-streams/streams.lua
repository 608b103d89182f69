#!lua name=streams_probe
-- A drain on Redis Streams with the bookkeeping a job store needs: the status counts, a map
-- from job id to entry, each job's result by id, and completions fenced so that only the
-- entries still pending for the completing worker count (see ../redis-streams.md).

-- KEYS[1] the queue's key base; ARGV: now, then id, payload, meta per job.
redis.register_function('sp_enqueue', function(keys, args)
  local stream, ids = keys[1] .. 'stream', {}
  for i = 2, #args, 3 do
    ids[#ids + 1] = args[i]
    ids[#ids + 1] = redis.call('XADD', stream, '*',
      'i', args[i], 'p', args[i + 1], 'm', args[i + 2], 'c', args[1])
  end
  redis.call('HSET', keys[1] .. 'ids', unpack(ids))
  redis.call('HINCRBY', keys[1] .. 'counts', 'p', #ids / 2)
  return #ids / 2
end)

-- ARGV: worker, count, now, lease expiry, the call's token prefix, and `span` when tokens carry
-- their entries (the lease then keeps only its first and last entry). The entries leased, as
-- XREADGROUP gives them: the stream of rescued jobs first, then the queue's. The call's lease
-- is the hash `lease:<prefix>` (worker, start, expiry, and its entries in order, each tagged
-- with its stream, `r` rescued or `q` the queue's, and followed by its job's id) and one member
-- of `leases`, scored by the expiry; a job's token is the prefix and its index in the call.
redis.register_function('sp_fetch', function(keys, args)
  local read = redis.call('XREADGROUP', 'GROUP', 'g', args[1], 'COUNT', args[2],
    'STREAMS', keys[1] .. 'rescued', keys[1] .. 'stream', '>', '>')
  if not read then
    return {}
  end
  local entries, tagged = {}, {}
  for _, stream in ipairs(read) do
    local tag = string.sub(stream[1], -7) == 'rescued' and 'r' or 'q'
    for _, entry in ipairs(stream[2]) do
      entries[#entries + 1] = entry
      -- The job's id is the entry's first field.
      tagged[#tagged + 1] = tag .. entry[1] .. ':' .. entry[2][2]
    end
  end
  local lease = keys[1] .. 'lease:' .. args[5]
  if args[6] == 'span' then
    -- Tokens carry their entries: the call keeps only its first and last.
    redis.call('HSET', lease, 'w', args[1], 's', args[3], 'x', args[4],
      'f', entries[1][1], 'l', entries[#entries][1])
  else
    redis.call('HSET', lease, 'w', args[1], 's', args[3], 'x', args[4],
      'e', table.concat(tagged, ','))
  end
  redis.call('ZADD', keys[1] .. 'leases', args[4], args[1] .. '|' .. args[5])
  redis.call('HINCRBY', keys[1] .. 'counts', 'p', -#entries)
  redis.call('HINCRBY', keys[1] .. 'counts', 'r', #entries)
  return entries
end)

-- Whether entry id `a` comes before `b`.
local function before(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, bm = tonumber(am), tonumber(bm)
  return am < bm or (am == bm and tonumber(as) < tonumber(bs))
end

-- Widens `span[tag]` ({least, greatest}) to take in `entry`.
local function widen(span, tag, entry)
  local s = span[tag]
  if not s then
    span[tag] = { entry, entry }
  elseif before(entry, s[1]) then
    s[1] = entry
  elseif before(s[2], entry) then
    s[2] = entry
  end
end

-- ARGV: now, the fence ('each': one XPENDING per job; 'range': one per stream and call, over
-- the batch's least to greatest entry), then token prefix, index (from 1), job id and result per
-- job from ARGV[3]. Each job's entry and worker come from its fetch call's lease hash; a job
-- counts only while that entry is pending for that worker. Returns a digit per job: 1
-- completed, 0 its lease is not held.
redis.register_function('sp_complete', function(keys, args)
  -- {least, greatest} of the entries of the calls the batch draws on, per stream, for 'range'.
  local calls, jobs, span, pending = {}, {}, {}, {}
  for i = 3, #args, 4 do
    local prefix = args[i]
    local call = calls[prefix]
    if not call then
      local h = redis.call('HMGET', keys[1] .. 'lease:' .. prefix, 'w', 'e')
      call = { worker = h[1], entries = {} }
      if h[2] then
        local first = {}
        for e, id in string.gmatch(h[2], '([^,:]+):([^,]+)') do
          call.entries[#call.entries + 1] = e
          call.entries[-#call.entries] = id
          first[string.sub(e, 1, 1)] = first[string.sub(e, 1, 1)] or e
        end
        -- A call's entries are in order in each stream: its span is its first and last.
        for tag, e in pairs(first) do
          widen(span, tag, string.sub(e, 2))
        end
        local last = call.entries[#call.entries]
        widen(span, string.sub(last, 1, 1), string.sub(last, 2))
      end
      calls[prefix] = call
    end
    -- The job's entry, if the token's index names it for this very job.
    local n = tonumber(args[i + 1])
    local tagged = call.entries[-n] == args[i + 2] and call.entries[n] or nil
    jobs[#jobs + 1] = { call = call, tagged = tagged, id = args[i + 2], result = args[i + 3] }
  end
  local streams = { q = keys[1] .. 'stream', r = keys[1] .. 'rescued' }
  if args[2] == 'range' then
    for tag, s in pairs(span) do
      local listed = redis.call('XPENDING', streams[tag], 'g', s[1], s[2], #jobs * 4)
      for _, p in ipairs(listed) do
        pending[tag .. p[1]] = p[2]
      end
    end
  end
  local acks, results, out = { q = {}, r = {} }, {}, {}
  local acked = 0
  for _, job in ipairs(jobs) do
    local holder = nil
    if job.tagged then
      job.tag, job.entry = string.sub(job.tagged, 1, 1), string.sub(job.tagged, 2)
    end
    if job.entry and args[2] == 'each' then
      local p = redis.call('XPENDING', streams[job.tag], 'g', job.entry, job.entry, 1)
      holder = p[1] and p[1][2]
    elseif job.entry then
      holder = pending[job.tagged]
    end
    if holder and holder == job.call.worker then
      local list = acks[job.tag]
      list[#list + 1] = job.entry
      results[#results + 1] = job.id
      results[#results + 1] = args[1] .. '|' .. job.result
      out[#out + 1] = '1'
      acked = acked + 1
    else
      out[#out + 1] = '0'
    end
  end
  for tag, list in pairs(acks) do
    if #list > 0 then
      redis.call('XACK', streams[tag], 'g', unpack(list))
    end
  end
  if acked > 0 then
    redis.call('HSET', keys[1] .. 'results', unpack(results))
    redis.call('HINCRBY', keys[1] .. 'counts', 'r', -acked)
    redis.call('HINCRBY', keys[1] .. 'counts', 'c', acked)
  end
  return table.concat(out)
end)

-- The fence with tokens that carry their entry (see ../redis-streams.md, Tokens): the client
-- reads each job's entry id out of its token and sends it. ARGV: now, the batch's least and
-- greatest entry ids (of the queue's stream), then per job the token's call prefix, entry id,
-- job id and result. A job counts while the id map names that entry for it and the entry is
-- pending for the worker of the call's lease. Returns a digit per job, as sp_complete.
redis.register_function('sp_complete_entries', function(keys, args)
  local stream = keys[1] .. 'stream'
  local workers, ids = {}, {}
  for i = 4, #args, 4 do
    ids[#ids + 1] = args[i + 2]
  end
  local current = redis.call('HMGET', keys[1] .. 'ids', unpack(ids))
  local pending = {}
  for _, p in ipairs(redis.call('XPENDING', stream, 'g', args[2], args[3], #ids * 4)) do
    pending[p[1]] = p[2]
  end
  local acks, results, out = {}, {}, {}
  for i = 4, #args, 4 do
    local prefix, entry = args[i], args[i + 1]
    local worker = workers[prefix]
    if worker == nil then
      worker = redis.call('HGET', keys[1] .. 'lease:' .. prefix, 'w') or false
      workers[prefix] = worker
    end
    if current[#out + 1] == entry and worker and pending[entry] == worker then
      acks[#acks + 1] = entry
      results[#results + 1] = args[i + 2]
      results[#results + 1] = args[1] .. '|' .. args[i + 3]
      out[#out + 1] = '1'
    else
      out[#out + 1] = '0'
    end
  end
  if #acks > 0 then
    redis.call('XACK', stream, 'g', unpack(acks))
    redis.call('HSET', keys[1] .. 'results', unpack(results))
    redis.call('HINCRBY', keys[1] .. 'counts', 'r', -#acks)
    redis.call('HINCRBY', keys[1] .. 'counts', 'c', #acks)
  end
  return table.concat(out)
end)
