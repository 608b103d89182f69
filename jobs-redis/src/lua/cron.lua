-- Stores the job of a cron tick unless this tick or a later one of the schedule already was.
-- ARGV[4] schedule, ARGV[5] tick (microseconds), ARGV[6..] the job as `store_jobs` reads it.
-- Returns the new job's id, or nil.
local last = redis.call('HGET', CRON, ARGV[4])
if last and tonumber(last) >= tonumber(ARGV[5]) then
  return false
end
redis.call('HSET', CRON, ARGV[4], ARGV[5])
local held, wakes = store_jobs(6)
if wakes then
  wake()
end
if #held > 0 then
  return finish(false)
end
return finish(ARGV[6])
