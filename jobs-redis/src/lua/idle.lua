-- Idle workers' offers (see `FetchParams::deliver`): a fetch that found nothing offers its
-- worker's idle places, and an enqueue that finds the ready set empty leases its job straight
-- to an offering worker that runs it, publishing the job on the worker's delivery channel, so
-- that the worker starts it without a fetch of its own.
--
--   idle           zset, score until when the offer stands (microseconds), member the worker
--   idle:<worker>  hash, the offer: `n` places left, `t` the first 24 hex digits of the tokens
--                  (each delivery's token ends with its 8-digit index `x`, counted from 0), `f`
--                  the lease's length in microseconds, `c` the worker's delivery channel, and
--                  `=<name>` the newest version of each job name the worker runs (or `*`: it
--                  runs every job)
--
-- The worker's next fetch withdraws its offer, and so does the offer's last place, its end
-- (a stopping worker's, see withdraw.lua), or its time running out (the lease's length: a
-- worker that died while offering takes no more jobs than its places, which are rescued with
-- its other jobs).

local IDLE = BASE .. 'idle'

-- The hash of `worker`'s offer.
local function offer_key(worker)
  return IDLE .. ':' .. worker
end

-- Withdraws `worker`'s offer, if it stands.
local function withdraw(worker)
  if redis.call('ZREM', IDLE, worker) == 1 then
    redis.call('DEL', offer_key(worker))
  end
end

-- The name and version of the job whose arguments start at ARGV[s] and end at ARGV[last] (see
-- store.lua): `m` is its third field, `v` (absent while 1) among the others.
local function name_version(s, last)
  local name = string.match(ARGV[s + 10], '^[^|]*|[^|]*|[^|]*|(.*)$')
  local version = 1
  for f = s + 11, last - 1, 2 do
    if ARGV[f] == 'v' then
      version = tonumber(ARGV[f + 1])
    end
  end
  return name, version
end

-- Takes a place of an offering worker that runs the job whose arguments start at ARGV[s] (and
-- end at ARGV[last]), if one offers: returns the worker, the lease's token and expiry and the
-- worker's channel, else nil. Looks at the first few offers only.
local function take_offer(s, last)
  local offers = redis.call('ZRANGEBYSCORE', IDLE, NOW_S, '+inf', 'LIMIT', 0, 8)
  if #offers == 0 then
    return nil
  end
  local name, version = name_version(s, last)
  for _, worker in ipairs(offers) do
    local key = offer_key(worker)
    local o = redis.call('HMGET', key, 'n', 't', 'x', 'f', 'c', '*', '=' .. (name or ''))
    local runs = o[6] or (o[7] and version and tonumber(o[7]) >= version)
    if o[1] and runs then
      local left, index = tonumber(o[1]) - 1, tonumber(o[3])
      if left < 1 then
        withdraw(worker)
      else
        redis.call('HSET', key, 'n', int(left), 'x', int(index + 1))
      end
      local token = o[2] .. string.format('%08x', index)
      return worker, token, int(NOW + tonumber(o[4])), o[5]
    end
  end
  return nil
end
