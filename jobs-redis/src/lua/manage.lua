-- Retries, cancels or deletes jobs of the queue. ARGV[4] the action (`retry`, `cancel` or
-- `delete`), ARGV[5..10] the filter each job must match (see filter.lua: a job may have changed
-- since it was found), ARGV[11..] the ids (those of jobs not in this queue are skipped).
-- Returns {changed, held}: the ids of the jobs changed, and {id, unique key, holder id} for
-- each job not retried because another active job holds its unique key. A retried workflow
-- step whose inputs have not all arrived goes back to waiting (in no set, no wake-up); any
-- other retried job is pending, due now.
local action = ARGV[4]
local f = read_filter(5)
local changed, held = {}, {}
-- The finished jobs that leave `done` (see states.lua).
local leaving = {}
local woken = false
for i = 11, #ARGV do
  local id = ARGV[i]
  local key = job_key(id)
  local v = redis.call('HMGET', key, 's', 'u', 'pr', 'tg', 'k', 'wf', 'wn', 'f')
  local s = v[1]
  if s and matches(key, id, f) then
    if action == 'retry' then
      if s == 'd' or s == 'x' then
        local holder = v[2] and redis.call('HGET', UNIQUE, v[2])
        if holder and holder ~= id then
          held[#held + 1] = { id, v[2], holder }
        else
          if v[2] then
            redis.call('HSET', UNIQUE, v[2], id)
          end
          local to = 'p'
          if awaits_inputs(v[6], v[7]) then
            to = 'w'
          end
          redis.call('HSET', key, 's', to, 'a', 0, 'ra', NOW_S)
          redis.call('HDEL', key, 'f', 'w', 'l')
          if s == 'x' then
            forget_finished(leaving, id, v[8])
          else
            redis.call('ZREM', DEAD, id)
          end
          recount(s, to)
          if to == 'p' then
            redis.call('ZADD', ready_of(v[5]), v[3], ready_member(NOW_S, id))
            woken = true
          end
          changed[#changed + 1] = id
        end
      end
    elseif action == 'cancel' then
      if s == 'w' or s == 's' or s == 'p' or s == 'r' then
        unindex(key, id, s, leaving)
        redis.call('HDEL', key, 'w', 'l')
        redis.call('HSET', key, 's', 'x', 'f', NOW_S)
        redis.call('ZADD', DONE, NOW_S, id)
        recount(nil, 'x')
        changed[#changed + 1] = id
      end
    else
      unindex(key, id, s, leaving)
      redis.call('ZREM', ALL, id)
      delete_job(key, id, v[4])
      changed[#changed + 1] = id
    end
  end
end
leave_done(leaving)
if woken then
  wake()
end
return finish({ changed, held })
