# Redis time per job (INFO commandstats) of a bulk enqueue and a drain on today's layout, driven
# as streams.py drives the Streams layout: 20,000 jobs in database 7, enqueued 500 per call,
# fetched 256 per call, completed 512 per call. Then, as pickup.py on the Streams layout, the
# cold cost of a single enqueue handed over to an idle worker's offer: 200 enqueues 5 ms apart,
# from the slow log. The library is built from jobs-redis/src/lua as scripts.rs builds it, and
# loaded under the name `probe`. Run from the repository's root.
import json, re, time, uuid, redis

src = 'jobs-redis/src'
rs = open(f'{src}/scripts.rs').read()
parts = re.search(r'const PARTS: &str = concat!\((.*?)\);', rs, re.S)[1]
text = '#!lua name=probe\n'
text += ''.join(open(f'{src}/lua/{p}').read() for p in re.findall(r'lua/([^"]+)"', parts))
for name, file in re.findall(r'^    (\w+): "([^"]+)",$', rs, re.M):
    body = open(f'{src}/lua/{file}').read()
    text += f"redis.register_function('probe_{name}', function(keys, args)\n"
    text += f"begin(keys, args)\n{body}\nend)\n"
r = redis.Redis(db=7, decode_responses=True)
r.execute_command('FUNCTION', 'LOAD', 'REPLACE', text)
N, base = 20000, '{probe:email}:'


def call(script, now, *args):
    head = ('FCALL', 'probe_' + script, 1, base, 'probe:wake', 'email', now)
    return r.execute_command(*head, *args)


def lease(now, prefix, places):
    """A fetch's arguments: a lease of 30 s for worker w1, `places` idle places to offer."""
    return (str(int(now) + 30_000_000), 'w1', '256', prefix, '', places, 'ch', '30000000', '', '0')


def job(now, i):
    id = uuid.uuid4().hex
    payload = json.dumps({"user_id": i, "email": f"user{i}@example.com", "t": int(now)})
    return [id, '%014x' % int(now) + id, payload, '', '3', '10', now, '3|e1000||bench_email']


def run():
    r.flushdb()
    now = str(int(time.time() * 1e6))
    r.config_resetstat()
    p = r.pipeline(transaction=False)
    for _ in range(N // 500):
        args = ['s']
        for i in range(500):
            args += job(now, i)
        p.execute_command('FCALL', 'probe_enqueue', 1, base, 'probe:wake', 'email', now,
                          *args)
    p.execute()
    enqueue = r.info('commandstats')['cmdstat_fcall']['usec'] / N
    r.config_resetstat()
    done, held = 0, []
    while True:
        prefix = uuid.uuid4().hex[:24]
        rows = json.loads(call('fetch', now, *lease(now, prefix, '0')))
        held += [(row[0], prefix + '%08x' % n) for n, row in enumerate(rows)]
        while len(held) >= 512 or (held and not rows):
            batch, held = held[:512], held[512:]
            args = []
            for id, token in batch:
                args += [id, token, 'AAAAAAAAAAAAAAAA', 'null']
            assert set(call('complete', now, *args)) == {'1'}
            done += len(batch)
        if not rows:
            break
    assert done == N
    return round(enqueue, 2), round(r.info('commandstats')['cmdstat_fcall']['usec'] / N, 2)


def handover(n=200):
    r.flushdb()
    now = str(int(time.time() * 1e6))
    call('fetch', now, *lease(now, 'a' * 24, '1000000'))
    r.slowlog_reset()
    for i in range(n):
        time.sleep(0.005)
        call('enqueue', now, 's', *job(now, i))
    assert r.zcard(base + 'running') == n, 'every job handed over'
    logged = r.slowlog_get(1000)
    took = sorted(e['duration'] for e in logged if 'probe_enqueue' in str(e['command']))
    return took[len(took) // 2]


print('today µs per job (enqueue, drain):', [run() for _ in range(4)])
slowlog = {k: r.config_get(k)[k] for k in ('slowlog-log-slower-than', 'slowlog-max-len')}
r.config_set('slowlog-log-slower-than', 0)
r.config_set('slowlog-max-len', 1000)
print('enqueue handed over, cold, µs (slow log p50):', [handover() for _ in range(3)])
for k, v in slowlog.items():
    r.config_set(k, v)
r.flushdb()
r.execute_command('FUNCTION', 'DELETE', 'probe')
