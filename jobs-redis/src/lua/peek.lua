-- Promotes due delayed jobs and returns the first ARGV[4] of the ready set with their
-- priorities, without leasing them (the first step of a fetch across queues); ARGV[5..] the
-- names the worker runs (none: every name), whose jobs alone count.
if promote(1000) > 0 then
  wake()
end
local limit = tonumber(ARGV[4])
local known = known_names(5)
if not known then
  return finish(redis.call('ZRANGE', READY, 0, limit - 1, 'WITHSCORES'))
end
local out = {}
for _, job in ipairs(known_head(limit, known)) do
  out[#out + 1] = job[1]
  out[#out + 1] = job[2]
end
return finish(out)
