# The loop of the streams layout's enqueue (jobs-redis/src/lua/streams/enqueue.lua) as it was
# before session 40 (`current`: every job's shape parsed, its level looked up, an empty unpack and
# a concatenation) and with the fast path for a job due now, of the default priority, `j` alone
# (`trimmed`): 20 calls of 500 jobs per round, 8 alternating rounds, Redis' script time per job
# from INFO commandstats. Database 7.
import time, uuid, redis, sys
r = redis.Redis(db=7)
HEAD = """
local XSTREAM, XRETURNED, XIDS = KEYS[1], KEYS[1] .. 'r', KEYS[2]
local ID_LEN = 32
local function level(p)
  if not p then
    return XSTREAM, XRETURNED, ''
  end
  return XSTREAM .. ':' .. p, XRETURNED .. ':' .. p, p .. ':'
end
"""
CURRENT = HEAD + """
local seen, ids, ready, later, i = {}, {}, 0, 0, 1
while i <= #ARGV do
  local shape, j = ARGV[i], ARGV[i + 1]
  local run_at, p, count = '', nil, 0
  if shape ~= '' then
    local due, priority, n = string.match(shape, '^([^|]*)|([^|]*)|(%d+)$')
    run_at, count = due, tonumber(n)
    if priority ~= '' then
      p = priority
    end
  end
  local id = string.sub(j, 1, ID_LEN)
  if not seen[p or ''] then
    seen[p or ''] = true
  end
  if run_at == '' then
    local queued, _, prefix = level(p)
    local entry = redis.call('XADD', queued, '*', 'j', j, unpack(ARGV, i + 2, i + 1 + count))
    ids[#ids + 1] = id
    ids[#ids + 1] = prefix .. entry
    ready = ready + 1
  end
  i = i + 2 + count
end
for from = 1, #ids, 1000 do
  redis.call('HSET', XIDS, unpack(ids, from, math.min(from + 999, #ids)))
end
return ready
"""
TRIMMED = HEAD + """
local seen, ids, n, ready, later, i = {}, {}, 0, 0, 0, 1
local xadd, sub, call = 'XADD', string.sub, redis.call
local last_p, queued, prefix = false, nil, nil
while i <= #ARGV do
  local shape, j = ARGV[i], ARGV[i + 1]
  if shape == '' then
    if last_p ~= nil then
      last_p = nil
      local q, _r, pf = level(nil)
      queued, prefix = q, pf
    end
    local entry = call(xadd, queued, '*', 'j', j)
    ids[n + 1] = sub(j, 1, ID_LEN)
    ids[n + 2] = entry
    n = n + 2
    ready = ready + 1
    i = i + 2
  else
    error('not in probe')
  end
end
for from = 1, #ids, 1000 do
  redis.call('HSET', XIDS, unpack(ids, from, math.min(from + 999, #ids)))
end
return ready
"""
META, PAYLOAD = '3|e1000||bench_email', '{"user_id":19,"email":"user19@example.com","t":1796622952282880}'
def args(n, run_at):
    out = []
    for k in range(n):
        out += ['', uuid.uuid4().hex + '%d:%d:%s%s' % (run_at + k, len(META), META, PAYLOAD)]
    return out
def script_usec():
    return r.info('commandstats').get('cmdstat_evalsha', {'usec': 0})['usec']


shas = {'current': r.script_load(CURRENT), 'trimmed': r.script_load(TRIMMED)}
per_job = {name: [] for name in shas}
for _ in range(8):
    for name, sha in shas.items():
        r.flushdb()
        calls = [args(500, int(time.time() * 1e6)) for _ in range(20)]
        start = script_usec()
        for c in calls:
            r.evalsha(sha, 2, '{probe:email}:x', '{probe:email}:ids', *c)
        per_job[name].append((script_usec() - start) / 10_000)
for name, xs in per_job.items():
    xs.sort()
    print('%-8s %.2f µs median of 8: %s' % (name, (xs[3] + xs[4]) / 2, ', '.join('%.2f' % x for x in xs)))
r.flushdb()
