-- Records failed attempts. ARGV[4..]: id, token, error report (JSON: kind, message, chain),
-- retry_at ('' for dead) per job. Returns a digit per job, 1 (accepted) or 0.
local woken = false
local out = each_leased(4, 4, function(i, id, key)
  local retry_at = ARGV[i + 3]
  if retry_at == '' then
    retry_at = nil
  end
  woken = finish_attempt(key, id, ARGV[i + 2], retry_at) or woken
  return true
end)
if woken then
  wake()
end
return finish(table.concat(out))
