-- Hands leased jobs back, their attempt not counted. ARGV[4..]: per job its fetch call's id,
-- its entry, its id and its new run_at ('' to keep its own). A job whose lease holds (see
-- `fenced`) has its entry acknowledged and is pending again: keeping its run_at, it keeps its
-- place (an entry of `xr`); with a later one, it waits in `xdelayed`. Returns a digit per job,
-- 1 (accepted) or 0.
local woken = false
local out, acks, calls = each_ended(4, 4, function(i, _, fields)
  local run_at = ARGV[i + 3]
  if run_at == '' then
    run_at = run_at_of(fields)
  end
  local attempts = attempts_after(fields) - 1
  woken = requeue(ARGV[i + 2], fields, attempts, run_at, 'p', true) or woken
  recount('r', 'p')
end)
let_go(acks, calls, woken)
return finish(table.concat(out))
