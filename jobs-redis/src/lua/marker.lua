-- The name of the store's layout (see marker.rs), in `{prefix}:layout`: a store without one is
-- named with ARGV[4], the layout of the calling release (every store written before the name
-- existed is laid out so). Returns the name the store has now.
local key = BASE .. 'layout'
local name = redis.call('GET', key)
if not name then
  redis.call('SET', key, ARGV[4])
  return ARGV[4]
end
return name
