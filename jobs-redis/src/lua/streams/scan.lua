-- Finds jobs of the queue that match a filter, walking the id map a step of `HSCAN` at a time:
-- the layout keeps no index of its jobs by id (an index would cost each enqueued job a sorted
-- set's insert), so a list reads the whole map. ARGV[4] the `HSCAN` cursor ('0' to start),
-- ARGV[5] only ids after this one ('' for none), ARGV[6] only ids before this one ('' for
-- none: the caller holds enough ids before it), ARGV[7] about this many ids examined,
-- ARGV[8..13] the filter (see filter.lua).
-- Returns {ids, cursor}: the matching ids, in no order (an id may come again in a later step),
-- and the cursor to go on from ('0' once the map is walked).
local after, before = ARGV[5], ARGV[6]
local f = read_filter(8)
local step = redis.call('HSCAN', XIDS, ARGV[4], 'COUNT', ARGV[7])
local map, found = step[2], {}
for k = 1, #map, 2 do
  local id = map[k]
  if id > after and (before == '' or id < before) then
    local state = not f or job_state(id, map[k + 1])
    if state and state_matches(state, f) then
      found[#found + 1] = id
    end
  end
end
return { found, step[1] }
