# Redis time per job (INFO commandstats) of a bulk enqueue and a drain on the Streams layout of
# streams.lua: 20,000 jobs in database 7, enqueued 500 per call, fetched 256 per call,
# completed 512 per call; each fetch reads the stream of rescued jobs first and records its lease
# in `leases`. `python3 streams.py each|range|direct`: completions fenced per job, or per call;
# `direct` fences per call and fetches with a plain XREADGROUP (and a ZADD), no script.
import json, sys, time, uuid, redis

mode = sys.argv[1]
r = redis.Redis(db=7, decode_responses=True)
r.execute_command('FUNCTION', 'LOAD', 'REPLACE', open(__file__.replace('.py', '.lua')).read())
N, base = 20000, '{probe:email}:'


def entry_order(entry):
    return tuple(map(int, entry[0].split('-')))


def fetch(now):
    if mode == 'direct':
        read = r.xreadgroup('g', 'w1', {base + 'rescued': '>', base + 'stream': '>'}, count=256)
        entries = [entry for _, stream in read for entry in stream]
        if entries:
            member = '|'.join(['w1', now, entries[0][0], entries[-1][0]])
            r.zadd(base + 'leases', {member: int(now) + 30_000_000})
        return entries
    expiry = int(now) + 30_000_000
    entries = r.execute_command('FCALL', 'sp_fetch', 1, base, 'w1', 256, now, expiry)
    return [(e, dict(zip(f[::2], f[1::2]))) for e, f in entries]


def run():
    r.flushdb()
    for stream in ('stream', 'rescued'):
        r.xgroup_create(base + stream, 'g', id='0', mkstream=True)
    now = str(int(time.time() * 1e6))
    r.config_resetstat()
    p = r.pipeline(transaction=False)
    for _ in range(N // 500):
        args = [now]
        for i in range(500):
            payload = json.dumps({"user_id": i, "email": f"user{i}@example.com", "t": int(now)})
            args += [uuid.uuid4().hex, payload, '3|e1000||bench_email']
        p.execute_command('FCALL', 'sp_enqueue', 1, base, *args)
    p.execute()
    enqueue = r.info('commandstats')['cmdstat_fcall']['usec'] / N
    r.config_resetstat()
    done, held = 0, []
    while True:
        entries = fetch(now)
        held += [(e, f['i']) for e, f in entries]
        while len(held) >= 512 or (held and not entries):
            batch, held = held[:512], held[512:]
            fence = 'each' if mode == 'each' else 'range'
            least, greatest = min(batch, key=entry_order)[0], max(batch, key=entry_order)[0]
            args = ['w1', now, fence, least, greatest]
            for e, i in batch:
                args += [e, i, 'null']
            assert set(r.execute_command('FCALL', 'sp_complete', 1, base, *args)) == {'1'}
            done += len(batch)
        if not entries:
            break
    assert done == N
    stats = r.info('commandstats')
    drain = stats['cmdstat_fcall']['usec']
    if mode == 'direct':
        drain += stats['cmdstat_xreadgroup']['usec'] + stats['cmdstat_zadd']['usec']
    return round(enqueue, 2), round(drain / N, 2)


print(mode, 'µs per job (enqueue, drain):', [run() for _ in range(4)])
r.flushdb()
r.execute_command('FUNCTION', 'DELETE', 'streams_probe')
