-- Stores a batch of jobs: ARGV[4] the mode (see store.lua), ARGV[5..] the jobs as
-- `store_jobs` reads them. Returns {code, max depth, duplicates} (see `store_jobs`); wakes the
-- queue's workers when a ready set was empty.
local out, wakes = store_jobs(5, ARGV[4])
if wakes then
  wake()
end
return finish(out)
