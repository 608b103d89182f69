-- Promotes due delayed jobs and returns the first ARGV[4] of the ready set with their
-- priorities, without leasing them (the first step of a fetch across queues); ARGV[5] the
-- worker, whose offer (see idle.lua) it withdraws: a worker fetching across queues offers
-- nothing; ARGV[6] the queue's limits to enforce ('' when none, see flow.lua), ARGV[7..] the
-- jobs the worker runs, as pairs of a name and its newest version (none: every job), which
-- alone count. Jobs the limits hold back are left out, as the fetch would leave them.
withdraw(ARGV[5])
if promote(1000) > 0 then
  wake()
end
local flow = read_flow(6)
local known = known_jobs(7)
local limit = queue_room(tonumber(ARGV[4]), flow)
if limit < 1 then
  return finish({})
end
-- Without jobs with key limits waiting apart (or limits to walk them by), the plain jobs
-- come first; the ready jobs with key limits only when the plain ones do not fill the peek.
local head = nil
if flow and keyed_waiting() then
  head = flow_head(limit, known)
elseif not known then
  local plain = redis.call('ZRANGE', READY, 0, limit - 1, 'WITHSCORES')
  if #plain == 2 * limit or not keyed_waiting() then
    return finish(plain)
  end
else
  head = known_head(limit, known)
  if #head < limit and keyed_waiting() then
    head = nil
  end
end
head = head or flow_head(limit, known)
local out = {}
for _, job in ipairs(head) do
  out[#out + 1] = job[1]
  out[#out + 1] = job[2]
end
return finish(out)
