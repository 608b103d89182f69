-- Removes the oldest finished (completed or cancelled) jobs beyond the retention: ARGV[4] keep
-- at most this many ('' for no count limit), ARGV[5] remove those finished before this time
-- ('' for no age limit), ARGV[6] at most this many per call. Returns how many were removed.
-- `done` keeps a member per call that finished jobs (see head.lua), so the finished jobs are
-- counted in `counts`, the oldest member is taken one at a time, and one removed only in part
-- goes back with its other jobs. A job named by a member that no longer finished then (a
-- worker of an earlier layout retried it without taking it out of the member) is skipped.
local limit, over, before = retention()
if not limit then
  return 0
end
local doomed = {}
-- Whether the job finished at `at` (a member's score) is beyond the retention.
local function beyond(at)
  return #doomed < over or (before ~= nil and tonumber(at) < before)
end
while #doomed < limit do
  local oldest = redis.call('ZRANGE', DONE, 0, 0, 'WITHSCORES')
  local member, at = oldest[1], oldest[2]
  if not member or not beyond(at) then
    break
  end
  redis.call('ZREM', DONE, member)
  local from = 1
  while from < #member and #doomed < limit and beyond(at) do
    local id = string.sub(member, from, from + ID_LEN - 1)
    from = from + ID_LEN
    local key = job_key(id)
    local v = redis.call('HMGET', key, 's', 'tg', 'f')
    if (v[1] == 'c' or v[1] == 'x') and tonumber(v[3]) == tonumber(at) then
      recount(v[1], nil)
      delete_job(key, id, v[2])
      doomed[#doomed + 1] = id
    end
  end
  if from < #member then
    redis.call('ZADD', DONE, at, string.sub(member, from))
  end
end
zrem_all(ALL, doomed)
return finish(#doomed)
