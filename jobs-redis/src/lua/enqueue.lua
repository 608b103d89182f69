-- Stores a batch of jobs (ARGV[4..]: each job as `insert` reads it).
-- Returns {id, duplicate} per job; wakes the queue's workers when a job is ready.
local out, woken = {}, false
local i = 4
while i <= #ARGV do
  local id, duplicate, nxt, ready = insert(i)
  out[#out + 1] = { id, duplicate }
  woken = woken or ready
  i = nxt
end
if woken then
  wake()
end
return finish(out)
