-- Records the progress of running jobs. ARGV[4..]: per job its fetch call's id, its entry, its
-- id and its progress, kept in `progress` while its lease holds (see `fenced`). Returns a
-- digit per job, 1 (accepted) or 0.
local FIRST, STEP = 4, 4
local held = fenced(FIRST, STEP)
local out = {}
for n, h in ipairs(held) do
  local i = FIRST + STEP * (n - 1)
  if h then
    redis.call('HSET', XPROGRESS, ARGV[i + 2], ARGV[i + 3])
  end
  out[n] = h and '1' or '0'
end
return finish(table.concat(out))
