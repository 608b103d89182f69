-- Stores the job of a cron tick unless this tick or a later one of the schedule already was.
-- ARGV[4] schedule, ARGV[5] tick (microseconds), ARGV[6..] the job as `store_jobs` reads it.
-- Returns {code, max depth, the new job's id or ''}: code 'full' (nothing stored, the tick not
-- recorded) when the queue holds its max depth.
local last = redis.call('HGET', CRON, ARGV[4])
if last and tonumber(last) >= tonumber(ARGV[5]) then
  return { 'ok', '', '' }
end
local out, wakes = store_jobs(6, 's')
if out[1] ~= 'ok' then
  return finish({ out[1], out[2], '' })
end
redis.call('HSET', CRON, ARGV[4], ARGV[5])
if wakes then
  wake()
end
if #out[3] > 0 then
  return finish({ 'ok', out[2], '' })
end
return finish({ 'ok', out[2], ARGV[6] })
