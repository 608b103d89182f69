-- Workflow steps: what a step's end does to the other steps of its workflow (complete, fail,
-- rescue; see jobs_core::workflow::Step). A step job's `wf` field is its step as JSON: only
-- this small document is decoded (its numbers are slots and indexes); results stay the raw
-- text they came as. A waiting step's hash holds `i<slot>`, the value delivered to each filled
-- slot, and `wn`, how many are filled.
--
-- The job an effect names may be of another queue: its keys are built from the prefix and
-- that queue's name. On one server a script reaches them; on a cluster the enqueue refuses
-- workflows whose effects leave the job's own queue (see enqueue.rs), so they are always in
-- this script's slot.

-- The key base of `queue`, which shares this script's prefix.
local function base_of(queue)
  if queue == QUEUE then
    return BASE
  end
  return '{' .. string.sub(BASE, 2, #BASE - #QUEUE - 3) .. ':' .. queue .. '}:'
end

-- Counts a job of the queue of key base `base` in status `to` rather than `from`.
local function recount_at(base, from, to)
  if base == BASE then
    recount(from, to)
  else
    redis.call('HINCRBY', base .. 'counts', from, -1)
    redis.call('HINCRBY', base .. 'counts', to, 1)
  end
end

-- Whether a step job, `wf` its step JSON (nil for an ordinary job) and `wn` its filled-slot
-- count (nil for none), still waits for inputs: a retry by hand puts it back to waiting
-- (see JobRecord::awaits_inputs).
local function awaits_inputs(wf, wn)
  if not wf then
    return false
  end
  return (tonumber(wn) or 0) < (tonumber(cjson.decode(wf).slots) or 0)
end

-- Fills slot `slot` of job `id` (hash `key`, queue `queue` of key base `base`) with `value`
-- while it waits and the slot is empty; the last slot makes it pending, due now, and wakes
-- its queue's workers.
local function deliver(base, queue, key, id, slot, value)
  local v = redis.call('HMGET', key, 's', 'wf', 'pr', 'k')
  if v[1] ~= 'w' or not v[2] or redis.call('HSETNX', key, 'i' .. int(slot), value) == 0 then
    return
  end
  local filled = redis.call('HINCRBY', key, 'wn', 1)
  if filled < (tonumber(cjson.decode(v[2]).slots) or 0) then
    return
  end
  redis.call('HSET', key, 's', 'p', 'ra', NOW_S)
  local ready = 'ready'
  if v[4] then
    ready = 'kready'
  end
  redis.call('ZADD', base .. ready, v[3], ready_member(NOW_S, id))
  recount_at(base, 'w', 'p')
  redis.call('PUBLISH', CHANNEL, queue)
end

-- Cancels job `id` (hash `key`, key base `base`) if it waits: waiting, scheduled or pending.
local function cancel_step(base, key, id)
  local v = redis.call('HMGET', key, 's', 'ra', 'u', 'k')
  local s = v[1]
  if s ~= 'w' and s ~= 's' and s ~= 'p' then
    return
  end
  if s ~= 'w' then
    local ready = 'ready'
    if v[4] then
      ready = 'kready'
    end
    redis.call('ZREM', base .. ready, ready_member(v[2], id))
    redis.call('ZREM', base .. 'delayed', id)
  end
  if v[3] and redis.call('HGET', base .. 'unique', v[3]) == id then
    redis.call('HDEL', base .. 'unique', v[3])
  end
  redis.call('HSET', key, 's', 'x', 'f', NOW_S)
  redis.call('ZADD', base .. 'done', NOW_S, id)
  recount_at(base, s, 'x')
end

-- Applies the effects `which` ('on_complete' or 'on_dead') of the step `wf` (its JSON) of a
-- job that just ended, `result` the raw text of its result (nil unless it completed).
local function apply_effects(wf, which, result)
  local effects = cjson.decode(wf)[which]
  if type(effects) ~= 'table' then
    return
  end
  for _, e in ipairs(effects) do
    local base = base_of(e.queue)
    local id = string.gsub(e.job, '-', '')
    local key = base .. 'j:' .. id
    if e.effect == 'deliver' then
      local value = 'null'
      if e.result == true and result then
        value = result
      end
      deliver(base, e.queue, key, id, e.slot, value)
    elseif e.effect == 'cancel' then
      cancel_step(base, key, id)
    end
  end
end
