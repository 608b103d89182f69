-- Stores jobs: ARGV[4] the mode (store.lua's), ARGV[5..] the jobs as `store_entries` (keys.lua)
-- reads them. Returns {code, max depth, duplicates} (see `store_entries`).
return finish(store_entries(5, ARGV[4]))
