-- The keys of a queue in the layout on Redis Streams (see streams/mod.rs), beside head.lua's:
--   x          stream, one entry per job made ready: its id (`i`) first, then the fields of
--              its record that never change (record.rs's names); consumer group `g`, whose
--              consumers are the workers and whose pending entries are the running jobs
--   ids        hash, job id -> its current entry id
--   res        hash, job id -> `mark|started_at|finished_at|result` of a completed job (the
--              mark of the completing lease's token, 16 base64 digits, as the hash layout's `l`
--              keeps it)
--   lease:<c>  hash, fetch call c's lease: worker `w`, start `s`, expiry `x`, its first and last
--              entry `f` and `l`; deleted once none of its entries is pending
--   leases     zset, score expiry, member `worker|c`: the fetch calls holding leases
local XSTREAM, XIDS, XRES, XLEASES

on_base(function()
  XSTREAM = BASE .. 'x'
  XIDS = BASE .. 'ids'
  XRES = BASE .. 'res'
  XLEASES = BASE .. 'leases'
end)

-- The key of fetch call `call`'s lease.
local function call_lease(call)
  return BASE .. 'lease:' .. call
end

-- Whether entry id `a` comes before entry id `b`.
local function entry_before(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, bm = tonumber(am), tonumber(bm)
  return am < bm or (am == bm and tonumber(as) < tonumber(bs))
end

-- Runs `command` on the stream's group with `args` after it, a few hundred at a time.
local function on_group(command, args)
  for from = 1, #args, 500 do
    redis.call(command, XSTREAM, 'g', unpack(args, from, math.min(from + 499, #args)))
  end
end
