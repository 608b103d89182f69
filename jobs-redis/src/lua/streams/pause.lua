-- Pauses the queue (ARGV[4] '1') or resumes it ('0') in its own slot, as the hash layout's
-- `pz` does (see paused.rs), and holds `x`'s group while it is paused: the group's last
-- delivered entry becomes `x`'s last, the one it was kept in `xheld`, so that no read takes an
-- entry of a paused queue, not even one blocked since before the pause (an enqueue into a
-- paused queue moves the group past its new entries too). A resume sets the group back to
-- `xheld`, which delivers every entry held since, in order.
if ARGV[4] == '1' then
  redis.call('HSET', BASE .. 'limits', 'pz', '1')
  ensure_level(nil)
  if redis.call('EXISTS', XHELD) == 0 then
    redis.call('SET', XHELD, last_delivered(XSTREAM))
  end
  redis.call('XGROUP', 'SETID', XSTREAM, 'g', '$')
  return 1
end
local held = redis.call('GET', XHELD)
if held and x_exists() then
  redis.call('XGROUP', 'SETID', XSTREAM, 'g', held)
end
redis.call('DEL', XHELD)
redis.call('HDEL', BASE .. 'limits', 'pz')
return 0
