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

-- ARGV: worker, count, now, lease expiry. The entries leased, as XREADGROUP gives them: the
-- stream of rescued jobs first, then the queue's; the call's lease is one member of `leases`
-- (the worker, its start and its entry range), scored by its expiry.
redis.register_function('sp_fetch', function(keys, args)
  local read = redis.call('XREADGROUP', 'GROUP', 'g', args[1], 'COUNT', args[2],
    'STREAMS', keys[1] .. 'rescued', keys[1] .. 'stream', '>', '>')
  if not read then
    return {}
  end
  local entries = {}
  for _, stream in ipairs(read) do
    for _, entry in ipairs(stream[2]) do
      entries[#entries + 1] = entry
    end
  end
  local member = table.concat({ args[1], args[3], entries[1][1], entries[#entries][1] }, '|')
  redis.call('ZADD', keys[1] .. 'leases', args[4], member)
  redis.call('HINCRBY', keys[1] .. 'counts', 'p', -#entries)
  redis.call('HINCRBY', keys[1] .. 'counts', 'r', #entries)
  return entries
end)

-- ARGV: worker, now, the fence ('each': one XPENDING per job; 'range': one per call, over the
-- entry ids from ARGV[4] to ARGV[5], the batch's least and greatest), then entry id, job id,
-- result per job from ARGV[6]. Returns a digit per job: 1 completed, 0 not the worker's.
redis.register_function('sp_complete', function(keys, args)
  local stream, worker = keys[1] .. 'stream', args[1]
  local mine = {}
  if args[3] == 'range' then
    local listed = redis.call('XPENDING', stream, 'g', args[4], args[5], (#args - 5) / 3 * 4,
      worker)
    for _, p in ipairs(listed) do
      mine[p[1]] = true
    end
  end
  local acks, results, out = {}, {}, {}
  for i = 6, #args, 3 do
    local pending = mine[args[i]]
    if args[3] == 'each' then
      pending = #redis.call('XPENDING', stream, 'g', args[i], args[i], 1, worker) == 1
    end
    if pending then
      acks[#acks + 1] = args[i]
      results[#results + 1] = args[i + 1]
      results[#results + 1] = args[2] .. '|' .. args[i + 2]
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
