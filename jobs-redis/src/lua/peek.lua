-- Promotes due delayed jobs and returns the first ARGV[4] of the ready set with their
-- priorities, without leasing them (the first step of a fetch across queues); ARGV[5] the
-- queue's limits to enforce ('' when none, see flow.lua), ARGV[6..] the names the worker runs
-- (none: every name), whose jobs alone count. Jobs the limits hold back are left out, as the
-- fetch would leave them.
if promote(1000) > 0 then
  wake()
end
local limit = tonumber(ARGV[4])
local flow = read_flow(5)
local known = known_names(6)
-- A peek without limits to check walks the ready jobs with key limits too only when the plain
-- ones do not fill it.
local head = nil
if not flow and not known then
  local plain = redis.call('ZRANGE', READY, 0, limit - 1, 'WITHSCORES')
  if #plain == 2 * limit or redis.call('ZCARD', KREADY) == 0 then
    return finish(plain)
  end
elseif not flow then
  head = known_head(limit, known)
  if #head < limit and redis.call('ZCARD', KREADY) > 0 then
    head = nil
  end
end
head = head or flow_head(limit, known, flow)
local out = {}
for _, job in ipairs(head) do
  out[#out + 1] = job[1]
  out[#out + 1] = job[2]
end
return finish(out)
