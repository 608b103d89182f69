-- Completes jobs. ARGV[4..]: per job its fetch call's id, its entry, its id, the mark of its token
-- and its result. A job whose lease holds (see `fenced`) has its entry acknowledged and
-- `mark|started_at|finished_at|result` stored in `res`, its unique key freed; a call none of whose
-- entries is pending any more is dropped. Returns a digit per job, 1 (accepted) or 0; a completion
-- repeated under the lease it applied under is accepted again and changes nothing.
local FIRST, STEP = 4, 5
local held, calls, ended = fenced(FIRST, STEP)
local acks, results, done, out = {}, {}, {}, {}
for n, h in ipairs(held) do
  local i = FIRST + STEP * (n - 1)
  local id = ARGV[i + 2]
  if h then
    to_ack(acks, h.stream, ARGV[i + 1])
    results[#results + 1] = id
    -- What follows the mark is the same for every job of a fetch call.
    local times = h.times
    if not times then
      times = '|' .. h.started .. '|' .. NOW_S .. '|'
      h.times = times
    end
    results[#results + 1] = ARGV[i + 3] .. times .. ARGV[i + 4]
    done[#done + 1] = id
    out[n] = '1'
  else
    local r = ended[n]
    out[n] = (r and string.sub(r, 1, 17) == ARGV[i + 3] .. '|') and '1' or '0'
  end
end
if #done > 0 then
  bulk('HSET', XRES, results, 1000)
  redis.call('ZADD', DONE, NOW_S, table.concat(done))
  recount_by('r', -#done)
  recount_by('c', #done)
  free_unique(done)
end
let_go(acks, calls, false)
return finish(table.concat(out))
