-- Readies an idle worker's blocked read of `x` (see streams/pickup.rs): reserves the lease of
-- fetch call ARGV[6] for worker ARGV[5] until ARGV[4], over no entry yet (see UNREAD_FIRST), so
-- that a job the read takes runs under it at once, and a rescue finds the lease should the
-- worker go before adopt.lua writes what the read took; lists the read in `xwaiting`; and
-- makes sure `x` and its group exist for the read. Fails with `TAKEN` when another call holds
-- the id, which the caller draws again. Returns 'ok', or 'limited', reserving nothing, when the
-- queue has a concurrency or a rate (`lm`, see flow.rs): only a fetch starts its jobs, within
-- them (a worker that knows of them reads none so; this holds for one that learned of them
-- since it fetched).
local expiry, worker, call = ARGV[4], ARGV[5], ARGV[6]
if redis.call('HGET', LIMITS, 'lm') then
  return 'limited'
end
local lease = call_lease(call)
if redis.call('HSETNX', lease, 'w', worker) == 0 then
  return redis.error_reply('TAKEN the fetch call id is in use')
end
ensure_level(nil)
redis.call('HSET', lease, 's', NOW_S, 'x', expiry, 'f', UNREAD_FIRST, 'l', UNREAD_LAST, 'k',
  string.sub(XSTREAM, #BASE + 1))
redis.call('ZADD', XLEASES, expiry, worker .. '|' .. call)
redis.call('HSET', XWAITING, worker .. '|' .. call, expiry)
return 'ok'
