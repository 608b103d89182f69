-- Sets leased jobs aside: the worker read them (a plain read takes every entry) but does not
-- run their name, or not at their version (during a rolling deploy, a newer release's jobs).
-- ARGV[4..]: per job its fetch call's id, its entry and its id. A job whose lease holds (see
-- `fenced`) has its entry acknowledged and waits apart (`xapart`), pending, its attempt not
-- spent, in its place among the jobs there, for a fetch of a worker that runs it; the queue's
-- workers are woken. Returns a digit per job, 1 (set aside) or 0.
local out, acks, calls = each_ended(4, 3, function(i, _, fields)
  wait_apart(ARGV[i + 2], with_j_first(fields, {}, {}))
  recount('r', 'p')
end)
let_go(acks, calls, true)
return finish(table.concat(out))
