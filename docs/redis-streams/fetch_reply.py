# What a fetch's entries cost Redis on their way to the client: an XREADGROUP of 238 entries of
# the bench's shape (as W2's fetches read) returned by a script as Redis gives them to Lua
# (`as_is`), flattened by the script to [id, j, id, j, ...] (`flat`), and the same XREADGROUP sent
# plainly (`plain`, as the fetch's transaction sends it since session 40): Redis' time per
# entry from INFO commandstats, the median of 10 rounds of 20,000 entries. Database 7.
import time, uuid, redis
r = redis.Redis(db=7)
AS_IS = """
return redis.call('XREADGROUP', 'GROUP', 'g', 'w', 'COUNT', ARGV[1], 'STREAMS', KEYS[1], '>')[1][2]
"""
FLAT = """
local read = redis.call('XREADGROUP', 'GROUP', 'g', 'w', 'COUNT', ARGV[1], 'STREAMS', KEYS[1], '>')[1][2]
local out, n = {}, 0
for _, e in ipairs(read) do
  local f = e[2]
  if #f == 2 then
    out[n + 1], out[n + 2] = e[1], f[2]
    n = n + 2
  else
    out[n + 1], out[n + 2] = e[1], cjson.encode(f)
    n = n + 2
  end
end
return out
"""
META, PAYLOAD = '3|e1000||bench_email', '{"user_id":19,"email":"user19@example.com","t":1796622952282880}'
def fill(n):
    r.flushdb()
    r.xgroup_create('{p}:x', 'g', '0', mkstream=True)
    p = r.pipeline(transaction=False)
    for k in range(n):
        p.xadd('{p}:x', {'j': uuid.uuid4().hex + '%d:%d:%s%s' % (1796622952282880 + k, len(META), META, PAYLOAD)})
    p.execute()
def stats():
    s = r.info('commandstats')
    return {k: v['usec'] for k, v in s.items()}
shas = {'as_is': r.script_load(AS_IS), 'flat': r.script_load(FLAT)}
res = {k: [] for k in list(shas) + ['plain']}
N, C = 20000, 238
for _ in range(10):
    for name in res:
        fill(N)
        before = stats()
        for _ in range(N // C):
            if name == 'plain':
                r.xreadgroup('g', 'w', {'{p}:x': '>'}, count=C)
            else:
                r.evalsha(shas[name], 1, '{p}:x', C)
        after = stats()
        key = 'cmdstat_xreadgroup' if name == 'plain' else 'cmdstat_evalsha'
        res[name].append((after[key] - before.get(key, 0)) / (N // C * C))
for name, xs in res.items():
    xs.sort()
    print('%-6s %.2f µs per entry (median of 10: %s)' % (name, (xs[4] + xs[5]) / 2, ', '.join('%.2f' % x for x in xs)))
r.flushdb()
