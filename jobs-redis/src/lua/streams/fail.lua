-- Records failed attempts. ARGV[4..]: per job its fetch call's id, its entry, its id, the
-- error report (JSON) and retry_at ('' for dead).
-- A job whose lease holds (see `fenced`) has its entry acknowledged and its error recorded,
-- then is pending again (a new entry, or in `xdelayed` until retry_at) or dead. Returns a
-- digit per job, 1 (accepted) or 0.
local woken = false
local out, acks, calls = each_ended(4, 5, function(i, h, fields)
  local id, retry_at = ARGV[i + 2], ARGV[i + 4]
  local attempts = attempts_after(fields)
  record_error(id, attempts, ARGV[i + 3])
  if retry_at == '' then
    bury(id, h.started)
    recount('r', 'd')
  else
    woken = requeue(id, fields, attempts, retry_at, 'p', false) or woken
    recount('r', 'p')
  end
end)
let_go(acks, calls, woken)
return finish(table.concat(out))
