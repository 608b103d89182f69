-- Idle workers' offers (see `FetchParams::deliver`): a fetch that found nothing offers its
-- worker's idle places, and an enqueue that finds the ready set empty leases its job straight
-- to an offering worker that runs it, publishing the job on the worker's delivery channel, so
-- that the worker starts it without a fetch of its own.
--
--   idle           zset, score until when the offer stands (microseconds), member the worker
--   idle:<worker>  hash, the offer: `n` places left, `t` the first 24 hex digits of the tokens
--                  (each delivery's token ends with its 8-digit index `x`, counted from 0), `f`
--                  the lease's length in microseconds, `o` the worker's clock when it last
--                  fetched (a delivery's lease runs from then at the earliest, whatever the
--                  enqueuing client's clock says), `c` the worker's delivery channel, and
--                  `=<name>` the newest version of each job name the worker runs (or `*`: it
--                  runs every job)
--
-- An offer stands while the worker's fetches find nothing: each one prolongs it by the lease's
-- length and recounts its places (see fetch.lua), so that no place counts twice, once in the
-- worker's count of its idle places and once in a delivery on its way. A fetch that takes jobs
-- withdraws it, and so do the worker's end (a stopping
-- worker's, see withdraw.lua), the rescue of a gone worker's jobs (rescue.lua), a fetch of
-- several queues (peek.lua), and its time running out.

local IDLE
on_base(function()
  IDLE = BASE .. 'idle'
end)

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
-- store.lua): `m` is the third of its values, `v` (absent while 1) among the fields after them.
local function name_version(s, last)
  local name = meta_name(ARGV[s + 7])
  local version = 1
  for f = s + 8, last - 1, 2 do
    if ARGV[f] == 'v' then
      version = tonumber(ARGV[f + 1])
    end
  end
  return name, version
end

-- Makes `worker`'s offer stand until `lasts` microseconds from now, as of the worker's clock.
local function prolong(worker, lasts)
  redis.call('ZADD', IDLE, int(NOW + lasts), worker)
  redis.call('HSET', offer_key(worker), 'o', NOW_S)
  -- An offer that ran out is dropped from `idle` by the next offer; its hash goes by itself.
  redis.call('PEXPIRE', offer_key(worker), int(lasts / 1000 + 1000))
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
    local o = redis.call('HMGET', key, 'n', 't', 'x', 'f', 'c', 'o', '*', '=' .. (name or ''))
    local runs = o[7] or (o[8] and version and tonumber(o[8]) >= version)
    if o[1] and tonumber(o[1]) > 0 and runs then
      local index = tonumber(o[3])
      redis.call('HSET', key, 'n', int(tonumber(o[1]) - 1), 'x', int(index + 1))
      local token = o[2] .. string.format('%08x', index)
      local from = math.max(NOW, tonumber(o[6]))
      return worker, token, int(from + tonumber(o[4])), o[5]
    end
  end
  return nil
end
