-- Finds jobs of the queue that match a filter. The layout keeps no index of its jobs by id (an
-- index would cost each enqueued job a sorted set's insert): a list walks the id map, a step
-- of `HSCAN` at a time, except that dead jobs are walked in the dead set, in id order, as the
-- hash layout walks it. ARGV[4] what is walked, `ids` or `dead`; ARGV[5] where the walk goes
-- on: the `HSCAN` cursor ('0' to start), or the last id examined (the first step's `after`);
-- ARGV[6] only ids after this one ('' for none), ARGV[7] only ids before this one ('' for
-- none: the caller holds enough ids before it), ARGV[8] about this many ids examined, ARGV[9]
-- at most this many matches, ARGV[10..15] the filter (see filter.lua).
-- Returns {ids, cursor}: the matching ids (in id order in the dead set, in no order in the id
-- map, where an id may come again in a later step), and where to go on ('' once the walk is
-- over).
local walk, cursor, after, before = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local budget, limit = tonumber(ARGV[8]), tonumber(ARGV[9])
local f = read_filter(10)
local found = {}

-- Keeps job `id` (`current` in the id map, or nil when it is gone) when it matches.
local function keep(id, current)
  if id > after and (before == '' or id < before) then
    local state = current and (not f or job_state(id, current))
    if state and state_matches(state, f) then
      found[#found + 1] = id
    end
  end
end

if walk == 'dead' then
  local ids = redis.call('ZRANGEBYLEX', DEAD, cursor == '' and '-' or '(' .. cursor, '+',
    'LIMIT', 0, budget)
  local current = #ids > 0 and redis.call('HMGET', XIDS, unpack(ids)) or {}
  for k, id in ipairs(ids) do
    keep(id, current[k])
    if #found == limit then
      return { found, '' }
    end
  end
  return { found, #ids < budget and '' or ids[#ids] }
end
local step = redis.call('HSCAN', XIDS, cursor, 'COUNT', budget)
local map = step[2]
for k = 1, #map, 2 do
  keep(map[k], map[k + 1])
end
return { found, step[1] == '0' and '' or step[1] }
