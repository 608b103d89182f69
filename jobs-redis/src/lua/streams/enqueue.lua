-- Stores jobs: ARGV[4..] as `store_entries` (keys.lua) reads them. Returns {id, holder} for
-- each job not stored because another active job holds its unique key, flat.
return finish(store_entries(4))
