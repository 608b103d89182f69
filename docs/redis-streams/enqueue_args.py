# The loop of the streams layout's enqueue (jobs-redis/src/lua/streams/enqueue.lua) alone, with
# an entry's job as session 38 passed it (seven arguments per job: run_at, priority, a count,
# `j`, its value, `ra`, its value; an entry of two fields) and as session 39 passes it (two: an
# empty shape and `j`, which holds the run_at; an entry of one field): 20 calls of 500 jobs of
# the bench's shape per round, 6 alternating rounds, Redis' script time per job from
# INFO commandstats. Database 7.
import time, uuid, redis

r = redis.Redis(db=7)
BEFORE = """
local ids, i = {}, 1
while i <= #ARGV do
  local count = tonumber(ARGV[i + 2])
  local entry = redis.call('XADD', KEYS[1], '*', unpack(ARGV, i + 3, i + 2 + count))
  ids[#ids + 1] = string.sub(ARGV[i + 4], 1, 32)
  ids[#ids + 1] = entry
  i = i + 3 + count
end
redis.call('HSET', KEYS[2], unpack(ids))
return 1
"""
AFTER = """
local ids, i = {}, 1
while i <= #ARGV do
  local j = ARGV[i + 1]
  local entry = redis.call('XADD', KEYS[1], '*', 'j', j)
  ids[#ids + 1] = string.sub(j, 1, 32)
  ids[#ids + 1] = entry
  i = i + 2
end
redis.call('HSET', KEYS[2], unpack(ids))
return 1
"""
META, PAYLOAD = '3|e1000||bench_email', '{"user_id":19,"email":"user19@example.com","t":1796622952282880}'


def before(n, run_at):
    out = []
    for k in range(n):
        j = uuid.uuid4().hex + '%d:%s%s' % (len(META), META, PAYLOAD)
        out += ['', '', 4, 'j', j, 'ra', run_at + k]
    return out


def after(n, run_at):
    out = []
    for k in range(n):
        out += ['', uuid.uuid4().hex + '%d:%d:%s%s' % (run_at + k, len(META), META, PAYLOAD)]
    return out


def script_usec():
    return r.info('commandstats')['cmdstat_evalsha']['usec']


shas = {'before': (r.script_load(BEFORE), before), 'after': (r.script_load(AFTER), after)}
per_job = {name: [] for name in shas}
for _ in range(6):
    for name, (sha, args) in shas.items():
        r.flushdb()
        calls = [args(500, int(time.time() * 1e6)) for _ in range(20)]
        start = script_usec()
        for call in calls:
            r.evalsha(sha, 2, '{probe:email}:x', '{probe:email}:ids', *call)
        per_job[name].append((script_usec() - start) / 10_000)
for name, xs in per_job.items():
    xs.sort()
    print('%-6s %.2f µs of script time per job (the median of 6: %s)'
          % (name, (xs[2] + xs[3]) / 2, ', '.join('%.2f' % x for x in xs)))
r.flushdb()
