-- Leases ready jobs: promotes due delayed jobs, then takes the lowest of the ready set (whose
-- jobs are all pending) that the worker knows.
-- ARGV[4] lease expiry, ARGV[5] worker, ARGV[6] limit, ARGV[7] the first 24 hex digits of this
-- fetch's lease tokens (each job's token ends with its 8-digit index in the batch), ARGV[8] the
-- queue's limits to enforce ('' when none, see flow.lua), ARGV[9] how many places the worker
-- has idle, to offer should the fetch find nothing (0: none, see idle.lua), ARGV[10] its
-- delivery channel, ARGV[11] the lease's length in microseconds, ARGV[12] and ARGV[13] the
-- token prefix of the last delivery the worker heard of and how many of that prefix it heard,
-- ARGV[14..] the jobs the worker runs, as pairs of a name and its newest version (none: every
-- job; jobs of other names, or stored at a newer version, stay where they are).
-- A fetch that takes jobs, or offers nothing, withdraws the worker's standing offer; one that
-- takes nothing makes its places the worker's idle places less the deliveries still on their
-- way (made, but not heard of), which those places do not count yet.
-- Returns [id, fields, payload, errors, reserved] per leased job, in order, as one JSON array
-- (one reply to build and parse, rather than one per value): `fields` is the hash as HGETALL
-- gave it before the lease (the caller knows what the lease wrote: status running, one more
-- attempt, started now, the lease itself), `payload` null when the hash holds it (see
-- `payload_cut`), else the payload key's value, `errors` null when there are none, and
-- `reserved` 1 for a lease reserved beyond the queue's concurrency (see flow.lua), else 0.
local promoted = promote(1000)
local flow = read_flow(8)
local known = known_jobs(14)
local asked = tonumber(ARGV[6])
-- The first `counted` jobs taken count against the limits; a fetch that reserves takes up to
-- as many more again as its reserve allows, within what it asked for.
local counted = queue_room(asked, flow)
local limit = counted
if reserving(flow) then
  limit = counted + math.min(flow.reserve + counted, asked - counted)
end
-- {member, score, fields} per job taken, in ready order.
local taken = {}
-- Jobs with key limits wait apart; while none does, a limited queue is read as a plain one,
-- within its room.
if flow and keyed_waiting() then
  -- The merged walk below takes them all, in order.
elseif limit >= 1 and not known then
  local popped = redis.call('ZPOPMIN', READY, limit)
  for j = 1, #popped, 2 do
    local fields = redis.call('HGETALL', job_key(string.sub(popped[j], 15)))
    taken[#taken + 1] = { popped[j], popped[j + 1], fields }
  end
elseif limit >= 1 then
  taken = known_head(limit, known)
  local members = {}
  for n, job in ipairs(taken) do
    members[n] = job[1]
  end
  zrem_all(READY, members)
end
-- While jobs with key limits wait apart, a fetch that found fewer jobs than it may take walks
-- both ready sets (whatever the worker knows of the queue, they are taken within their limits).
if limit > #taken and keyed_waiting() then
  local picked = flow_head(limit - #taken, known)
  local members = { [READY] = {}, [KREADY] = {} }
  for _, job in ipairs(picked) do
    local set = members[job[4]]
    set[#set + 1] = job[1]
    taken[#taken + 1] = job
  end
  zrem_all(READY, members[READY])
  zrem_all(KREADY, members[KREADY])
  count_key_starts(picked, ARGV[7])
end
if flow and flow.rate and #taken > 0 then
  log_starts(STARTS, ARGV[7], #taken, flow.period)
end
-- Promoted jobs left over: idle workers share them.
if promoted > 0 and not none_ready() then
  wake()
end
local out = {}
local expiry, worker, tokens = ARGV[4], ARGV[5], ARGV[7]
-- The payload keys of the jobs whose payload is not in their hash, and those jobs' places in
-- `out`.
local running, reserved, payload_keys, long = {}, {}, {}, {}
for _, job in ipairs(taken) do
  local id = string.sub(job[1], 15)
  local key = job_key(id)
  local fields = job[3]
  local attempt, errors, inline = 0, cjson.null, false
  for f = 1, #fields, 2 do
    local name = fields[f]
    if name == 'a' then
      -- An `a` that is not a number leases as the first attempt; the client, reading the
      -- hash as it was, fails the job dead as corrupt.
      attempt = tonumber(fields[f + 1]) or 0
    elseif name == 'ne' then
      local listed = redis.call('LRANGE', side_key('e', id), 0, -1)
      if #listed > 0 then
        errors = listed
      end
    elseif name == 'p' then
      inline = true
    end
  end
  local n = #out
  redis.call('HSET', key, 's', 'r', 'a', int(attempt + 1), 'st', NOW_S, 'w', worker,
    'l', tokens .. string.format('%08x', n) .. ':' .. expiry)
  running[#running + 1] = expiry
  running[#running + 1] = id
  local beyond = n >= counted
  if beyond then
    reserved[#reserved + 1] = expiry
    reserved[#reserved + 1] = id
  end
  if not inline then
    payload_keys[#payload_keys + 1] = side_key('p', id)
    long[#long + 1] = n + 1
  end
  out[n + 1] = { id, fields, cjson.null, errors, beyond and 1 or 0 }
end
if #out > 0 then
  bulk('ZADD', RUNNING, running, 1000)
  if #reserved > 0 then
    bulk('ZADD', RESERVED, reserved, 1000)
  end
  local payloads = bulk('MGET', nil, payload_keys, 500)
  for j, n in ipairs(long) do
    out[n][3] = payloads[j] or cjson.null
  end
  recount_by('p', -#out)
  recount_by('r', #out)
end
local places = tonumber(ARGV[9])
local standing = redis.call('HMGET', offer_key(worker), 't', 'x')
if standing[1] and (#out > 0 or places == 0) then
  withdraw(worker)
elseif standing[1] then
  -- Nothing to take, and an offer stands: it stands on, from now, its places recounted.
  local on_way = tonumber(standing[2])
  if standing[1] == ARGV[12] then
    on_way = on_way - tonumber(ARGV[13])
  end
  redis.call('HSET', offer_key(worker), 'n', int(math.max(places - on_way, 0)))
  prolong(worker, tonumber(ARGV[11]))
elseif #out == 0 and places > 0 then
  -- Nothing to take and no offer standing: offer the worker's idle places until the lease's
  -- length has passed.
  local offer = { 'n', ARGV[9], 't', tokens, 'x', '0', 'f', ARGV[11], 'c', ARGV[10], 'o', NOW_S }
  if not known then
    offer[#offer + 1] = '*'
    offer[#offer + 1] = '1'
  end
  for name, version in pairs(known or {}) do
    offer[#offer + 1] = '=' .. name
    offer[#offer + 1] = int(version)
  end
  redis.call('ZREMRANGEBYSCORE', IDLE, '-inf', '(' .. NOW_S)
  bulk('HSET', offer_key(worker), offer, 1000)
  prolong(worker, tonumber(ARGV[11]))
end
if #out == 0 then
  return finish('[]')
end
return finish(cjson.encode(out))
