-- Stores the job of a cron tick unless this tick or a later one of the schedule already was.
-- ARGV[4] schedule, ARGV[5] tick (microseconds), ARGV[6..] the job as `store_entries` reads
-- it. Returns the hash layout's cron.lua's answer: {code, max depth, the new job's id or ''},
-- the id '' when the tick was stored before or an active job holds the job's unique key (the
-- tick is recorded then), code 'full' (nothing stored, the tick not recorded) when the queue
-- holds its max depth.
local last = redis.call('HGET', CRON, ARGV[4])
if last and tonumber(last) >= tonumber(ARGV[5]) then
  return { 'ok', '', '' }
end
local out = store_entries(6, 's')
if out[1] ~= 'ok' then
  return finish({ out[1], out[2], '' })
end
redis.call('HSET', CRON, ARGV[4], ARGV[5])
if #out[3] > 0 then
  return finish({ 'ok', out[2], '' })
end
return finish({ 'ok', out[2], string.sub(ARGV[7], 1, ID_LEN) })
