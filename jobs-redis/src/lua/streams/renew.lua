-- Extends leases. ARGV[4..]: the new expiry, then per job its fetch call's id, its entry and
-- its id. A job whose lease holds (see `fenced`) and has not lapsed gets the new expiry in its
-- call's lease (a field named by its entry), and the call's member of `leases` the earlier of
-- its score and the new expiry; a reserved one stays reserved (see flow.lua) until then.
-- Returns a digit per job, 1 (accepted) or 0.
local FIRST, STEP = 5, 3
local expiry = ARGV[4]
local held = fenced(FIRST, STEP)
local reserved = redis.call('EXISTS', RESERVED) == 1
local out = {}
for n, h in ipairs(held) do
  local i = FIRST + STEP * (n - 1)
  out[n] = '0'
  if h then
    local lease = call_lease(ARGV[i])
    local v = redis.call('HMGET', lease, ARGV[i + 1], 'x')
    if tonumber(v[1] or v[2]) >= NOW then
      redis.call('HSET', lease, ARGV[i + 1], expiry)
      redis.call('ZADD', XLEASES, 'LT', expiry, h.worker .. '|' .. ARGV[i])
      if reserved then
        redis.call('ZADD', RESERVED, 'XX', expiry, reserved_member(h.stream, ARGV[i + 1]))
      end
      out[n] = '1'
    end
  end
end
return finish(table.concat(out))
