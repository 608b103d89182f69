-- Rescues up to ARGV[4] running jobs whose lease expired before now, or (when ARGV[6..] name
-- gone workers) that those workers hold, whatever their leases; it records for the attempt
-- the error report ARGV[5] (JSON, written by jobs-core): pending again at their own run_at,
-- ahead of the jobs that became ready since (an entry of `xr`), or dead when no attempt is
-- left. A gone worker's calls and places under a concurrency are dropped and it leaves the
-- groups. Returns the jobs' ids.
local limit = tonumber(ARGV[4])
local rescued = {}
local all = held_streams()

-- Ends the attempt of the job at pending entry `entry` of `stream`, started at `started`.
local function lapse(stream, entry, started)
  local fields = entry_fields(stream, entry)
  ack_all({ [stream] = { entry } })
  if not fields then
    return
  end
  local id = job_of(fields)
  local current = redis.call('HGET', XIDS, id)
  if not current or select(2, located(current)) ~= entry then
    return
  end
  local attempts = attempts_after(fields)
  record_error(id, attempts, ARGV[5])
  -- The max attempts lead the `m` field. A job whose `j` is malformed (which its fetch failed
  -- as dead, unless its worker was gone first) dies: it cannot be read to run again.
  local most = max_attempts_of(fields)
  if most and attempts < most then
    requeue(id, fields, attempts, run_at_of(fields), 'p', true)
    recount('r', 'p')
  else
    bury(id, started)
    recount('r', 'd')
  end
  rescued[#rescued + 1] = id
end

-- The pending entries of `worker` in each stream, at most `count`: {stream, entry}.
local function held_by(worker, count)
  local held = {}
  for _, stream in ipairs(all) do
    for _, p in ipairs(redis.call('XPENDING', stream, 'g', '-', '+', count, worker)) do
      held[#held + 1] = { stream, p[1] }
    end
  end
  return held
end

if #ARGV >= 6 then
  for i = 6, #ARGV do
    local worker = ARGV[i]
    -- The places under a concurrency its promoted jobs held are free.
    redis.call('HDEL', PLACES, worker)
    local calls = leases_of(worker)
    for _, held in ipairs(#rescued < limit and held_by(worker, limit - #rescued) or {}) do
      if #rescued == limit then
        break
      end
      local stream, entry = held[1], held[2]
      -- Its start is its call's: the one that read its stream over a range that holds it.
      local started = NOW_S
      for _, c in ipairs(calls) do
        if covers(c, stream, entry) then
          started = c.started
        end
      end
      lapse(stream, entry, started)
    end
    if #held_by(worker, 1) == 0 then
      for _, c in ipairs(calls) do
        redis.call('DEL', call_lease(c.call))
        redis.call('ZREM', XLEASES, worker .. '|' .. c.call)
        redis.call('HDEL', XWAITING, worker .. '|' .. c.call)
      end
      for _, stream in ipairs(all) do
        redis.call('XGROUP', 'DELCONSUMER', stream, 'g', worker)
      end
    end
  end
else
  local due = redis.call('ZRANGE', XLEASES, '-inf', '(' .. NOW_S, 'BYSCORE', 'LIMIT', 0, limit)
  for _, member in ipairs(due) do
    local worker, call = string.match(member, '^(.*)|([^|]*)$')
    local lease = call_lease(call)
    local c = lease_of(call)
    local earliest = nil
    if c then
      for _, p in ipairs(redis.call('XPENDING', c.stream, 'g', c.first, c.last, 10000, worker)) do
        local expiry = tonumber(redis.call('HGET', lease, p[1]) or c.expiry)
        if expiry < NOW and #rescued < limit then
          lapse(c.stream, p[1], c.started)
        elseif not earliest or expiry < earliest then
          earliest = expiry
        end
      end
    end
    if earliest then
      redis.call('ZADD', XLEASES, earliest, member)
    else
      redis.call('DEL', lease)
      redis.call('ZREM', XLEASES, member)
      redis.call('HDEL', XWAITING, member)
    end
  end
end
if #rescued > 0 then
  wake()
end
return finish(rescued)
