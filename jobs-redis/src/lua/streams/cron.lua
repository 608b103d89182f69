-- Stores the job of a cron tick unless this tick or a later one of the schedule already was.
-- ARGV[4] schedule, ARGV[5] tick (microseconds), ARGV[6..] the job as `store_entries` reads
-- it. Returns the new job's id, or '' when the tick was stored before or an active job holds
-- the job's unique key (the tick is recorded then, as the hash layout's cron.lua records it).
local last = redis.call('HGET', CRON, ARGV[4])
if last and tonumber(last) >= tonumber(ARGV[5]) then
  return ''
end
local held = store_entries(6)
redis.call('HSET', CRON, ARGV[4], ARGV[5])
if #held > 0 then
  return finish('')
end
return finish(string.sub(ARGV[7], 1, ID_LEN))
