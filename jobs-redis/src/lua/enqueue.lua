-- Stores a batch of jobs (ARGV[4..]: the jobs as `store_jobs` reads them).
-- Returns a {batch index, holder id} pair for each job whose unique key an active job holds;
-- wakes the queue's workers when its ready set was empty.
local held, wakes = store_jobs(4)
if wakes then
  wake()
end
return finish(held)
