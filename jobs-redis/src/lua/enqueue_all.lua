-- Stores a batch of jobs that spans queues in one call, all or nothing: a batch holding
-- workflow steps, on one server (a cluster keeps each queue in its own slot, where no script
-- reaches across queues). ARGV[4] the number of queues; then per queue its name and the index
-- of the last of its jobs' arguments, followed by those arguments as `store_jobs` reads them.
-- Every queue is checked first (mode 'c'): when one would overfill, nothing is stored. Returns
-- per queue, in order, {code, max depth, duplicates} (see `store_jobs`); after a 'full', no
-- more. Wakes each queue's workers when its ready set was empty.

-- The key base's prefix: BASE is `{prefix:queue}:`.
local PREFIX = string.sub(BASE, 2, #BASE - #QUEUE - 3)

-- Points the key names and the counts at `queue`.
local function use(queue)
  QUEUE = queue
  use_base('{' .. PREFIX .. ':' .. queue .. '}:')
  deltas = {}
end

-- {queue, first argument, last argument} per queue.
local parts = {}
local at = 5
for _ = 1, tonumber(ARGV[4]) do
  local last = tonumber(ARGV[at + 1])
  parts[#parts + 1] = { ARGV[at], at + 2, last }
  at = last + 1
end

local out = {}
for n, part in ipairs(parts) do
  use(part[1])
  local checked = store_jobs(part[2], 'c', part[3])
  out[n] = checked
  if checked[1] == 'full' then
    return out
  end
end
for n, part in ipairs(parts) do
  use(part[1])
  local stored, wakes = store_jobs(part[2], 's', part[3])
  out[n] = stored
  if wakes then
    wake()
  end
  finish(nil)
end
return out
