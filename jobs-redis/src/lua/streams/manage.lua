-- Retries, cancels or deletes jobs of the queue, with manage.lua's arguments and reply: ARGV[4]
-- the action (`retry`, `cancel` or `delete`), ARGV[5..10] the filter each job must match (see
-- filter.lua), ARGV[11..] the ids (those of jobs not in this queue are skipped). Returns
-- {changed, held}: the ids of the jobs changed, and {id, unique key, holder id} for each job
-- not retried because another active job holds its unique key.
-- - retry: a dead or cancelled job is pending again, due now, its attempts spent forgotten (a
--   new entry of its queue's stream, at its end), holding its unique key again; unless another
--   active job holds the key;
-- - cancel: a pending or scheduled job leaves its stream or `xdelayed` for `d:<id>`, where it
--   keeps its fields; a running one's entry is acknowledged, so its worker's lease no longer
--   holds. Either ends as `x|started_at|finished_at|` in `res` (started_at empty when it never
--   ran) and in `done`, as completed jobs do, for retention; its unique key is freed;
-- - delete: the job goes with its entry or `d:<id>`, result, progress and errors, and frees its
--   unique key.
local action = ARGV[4]
local f = read_filter(5)
local changed, held, leaving = {}, {}, {}
local woken = false

-- Acknowledges a running job's entry and drops its call's lease once none of its entries is
-- pending; returns when the job started ('' when its lease is gone).
local function let_go_of(state)
  local c = running_lease(state.stream, state.entry)
  ack_all({ [state.stream] = { state.entry } })
  if c then
    drop_ended({ [c.call] = c })
    return c.started
  end
  return ''
end

-- Takes job `id` (see `job_state`) out of where it is kept: its entry or `d:<id>`, `xdelayed`
-- or `xapart`, the dead set or `done`; and out of the counts.
local function remove(id, state)
  local s = state.status
  if state.entry then
    if s == 'r' then
      let_go_of(state)
    elseif s == 'p' then
      recount_by('q', -1)
    end
    redis.call('XDEL', state.stream, state.entry)
  else
    redis.call('DEL', delayed_key(id))
    unready(id, state.fields)
  end
  if s == 'd' then
    redis.call('ZREM', DEAD, id)
  elseif s == 'c' or s == 'x' then
    forget_finished(leaving, id, string.match(state.ended, '^[^|]*|[^|]*|([^|]*)|'))
  end
  recount(s, nil)
end

for i = 11, #ARGV do
  local id = ARGV[i]
  local current = redis.call('HGET', XIDS, id)
  local state = current and job_state(id, current)
  if state and state_matches(state, f) then
    local s = state.status
    if action == 'retry' then
      local key = field_of(state.fields, 'u')
      local holder = (s == 'd' or s == 'x') and key and hold_unique(key, id)
      if holder then
        held[#held + 1] = { id, key, holder }
      elseif s == 'd' or s == 'x' then
        remove(id, state)
        redis.call('HDEL', XRES, id)
        woken = requeue(id, state.fields, 0, NOW_S, 'p', false) or woken
        recount(nil, 'p')
        changed[#changed + 1] = id
      end
    elseif action == 'cancel' then
      if s == 's' or s == 'p' or s == 'r' then
        local started = ''
        if s == 'r' then
          started = let_go_of(state)
        elseif state.entry then
          -- A pending entry would still be delivered: its fields move to `d:<id>`.
          redis.call('XDEL', state.stream, state.entry)
          recount_by('q', -1)
          redis.call('HSET', delayed_key(id), unpack(state.fields))
          redis.call('HSET', XIDS, id, 'd')
        else
          unready(id, state.fields)
        end
        if s ~= 'r' then
          redis.call('HSET', delayed_key(id), 's', 'x')
        end
        redis.call('HSET', XRES, id, 'x|' .. started .. '|' .. NOW_S .. '|')
        redis.call('ZADD', DONE, NOW_S, id)
        recount(s, 'x')
        free_unique({ id })
        changed[#changed + 1] = id
      end
    else
      remove(id, state)
      redis.call('HDEL', XIDS, id)
      redis.call('HDEL', XRES, id)
      redis.call('HDEL', XPROGRESS, id)
      redis.call('DEL', side_key('e', id))
      free_unique({ id })
      changed[#changed + 1] = id
    end
  end
end
leave_done(leaving)
if woken then
  wake()
end
return finish({ changed, held })
