-- Records failed attempts. ARGV[4..]: id, token, error, retry_at ('' for dead) per job.
-- Returns 1 (accepted) or 0 per job.
local out, woken = {}, false
for i = 4, #ARGV, 4 do
  local id, retry_at = ARGV[i], ARGV[i + 3]
  local key = leased(id, ARGV[i + 1])
  if key then
    if retry_at == '' then
      retry_at = nil
    end
    woken = finish_attempt(key, id, ARGV[i + 2], retry_at) or woken
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if woken then
  wake()
end
return finish(out)
