-- Finds jobs of the queue that match a filter, in id order, walking one of the queue's sets.
-- ARGV[4] the set walked, whose jobs are the candidates: `all`, `dead` or `tag:<tag>` (by id)
-- or `running` (by lease expiry, so read whole and sorted: it holds at most the jobs that
-- workers run); ARGV[5] only ids after this one ('' for none); ARGV[6] at most this many
-- matches; ARGV[7] at most this many jobs examined, so that a call never blocks Redis for
-- long; ARGV[8..13] the filter (see filter.lua).
-- Returns {ids, cursor}: the matching ids, and the id to go on after (nil once the set is
-- walked to its end).
local after = ARGV[5]
local limit, budget = tonumber(ARGV[6]), tonumber(ARGV[7])
local f = read_filter(8)
local found = {}

-- Keeps the matching ones of `ids`; true once `limit` matched (the cursor is then the last).
local function keep(ids)
  for _, id in ipairs(ids) do
    if matches(job_key(id), id, f) then
      found[#found + 1] = id
      if #found == limit then
        return true
      end
    end
  end
  return false
end

if ARGV[4] == 'running' then
  local ids = {}
  for _, id in ipairs(redis.call('ZRANGE', RUNNING, 0, -1)) do
    if id > after then
      ids[#ids + 1] = id
    end
  end
  table.sort(ids)
  if keep(ids) then
    return { found, found[#found] }
  end
  return { found, false }
end

local source = BASE .. ARGV[4]
local min, last, examined = '-', false, 0
if after ~= '' then
  min = '(' .. after
end
while examined < budget do
  local want = math.min(budget - examined, 500)
  local ids = redis.call('ZRANGEBYLEX', source, min, '+', 'LIMIT', 0, want)
  if keep(ids) then
    return { found, found[#found] }
  end
  if #ids < want then
    return { found, false }
  end
  examined = examined + #ids
  last = ids[#ids]
  min = '(' .. last
end
return { found, last }
