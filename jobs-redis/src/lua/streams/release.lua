-- Hands leased jobs back, their attempt not counted. ARGV[4..]: the least and greatest entry
-- of the batch, then per job its fetch call's id, its entry, its id and its new run_at ('' to
-- keep its own). A job whose lease holds (see `fenced`) has its entry acknowledged and is
-- pending again: keeping its run_at, it keeps its place (an entry of `xr`); with a later one,
-- it waits in `xdelayed`. Returns a digit per job, 1 (accepted) or 0.
local FIRST, STEP = 6, 4
local held, calls = fenced(FIRST, STEP)
local acks, out, woken = {}, {}, false
for n, h in ipairs(held) do
  local i = FIRST + STEP * (n - 1)
  local fields = h and entry_fields(h.stream, ARGV[i + 1])
  if fields then
    local run_at = ARGV[i + 3]
    if run_at == '' then
      run_at = field_of(fields, 'ra')
    end
    to_ack(acks, h.stream, ARGV[i + 1])
    local attempts = attempts_after(fields) - 1
    woken = requeue(ARGV[i + 2], fields, attempts, run_at, 'p', true) or woken
    recount('r', 'p')
    out[n] = '1'
  else
    out[n] = '0'
  end
end
let_go(acks, calls, woken)
return finish(table.concat(out))
