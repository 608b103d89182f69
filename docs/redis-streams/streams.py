# Redis time per job (INFO commandstats) of a bulk enqueue and a drain on the Streams layout of
# streams.lua: 20,000 jobs in database 7, enqueued 500 per call, fetched 256 per call,
# completed 512 per call; each fetch reads the stream of rescued jobs first and records its
# lease (a hash of its entries, and a member of `leases`), and each completion finds its jobs'
# entries and worker by their tokens. `python3 streams.py MODE`, MODE one of:
#   each          tokens name their call and index; each completion's entry checked alone
#   range         tokens name their call and index; one XPENDING per completion call
#   direct        as range, and a fetch is a plain XREADGROUP (then the lease's HSET and ZADD)
#   entry         tokens carry their entries, which the client sends (sp_complete_entries)
#   direct-entry  as entry, and fetched as direct
import json, sys, time, uuid, redis

mode = sys.argv[1]
r = redis.Redis(db=7, decode_responses=True)
r.execute_command('FUNCTION', 'LOAD', 'REPLACE', open(__file__.replace('.py', '.lua')).read())
N, base = 20000, '{probe:email}:'


def fetch(now):
    """Leases up to 256 jobs: [(token prefix, index from 1, job id, entry id)]."""
    prefix, expiry = uuid.uuid4().hex[:24], int(now) + 30_000_000
    span = mode in ('entry', 'direct-entry')
    if mode.startswith('direct'):
        read = r.xreadgroup('g', 'w1', {base + 'rescued': '>', base + 'stream': '>'}, count=256)
        entries, tagged = [], []
        for stream, listed in read:
            tag = 'r' if stream.endswith('rescued') else 'q'
            entries += listed
            tagged += [tag + e + ':' + f['i'] for e, f in listed]
        if entries:
            p = r.pipeline(transaction=False)
            lease = {'w': 'w1', 's': now, 'x': expiry}
            if span:
                lease.update(f=entries[0][0], l=entries[-1][0])
            else:
                lease['e'] = ','.join(tagged)
            p.hset(base + 'lease:' + prefix, mapping=lease)
            p.zadd(base + 'leases', {'w1|' + prefix: expiry})
            p.execute()
    else:
        listed = r.execute_command('FCALL', 'sp_fetch', 1, base, 'w1', 256, now, expiry, prefix,
                                   'span' if span else 'list')
        entries = [(e, dict(zip(f[::2], f[1::2]))) for e, f in listed]
    return [(prefix, n, f['i'], e) for n, (e, f) in enumerate(entries, 1)]


def entry_order(entry):
    return tuple(map(int, entry.split('-')))


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
    fence = 'each' if mode == 'each' else 'range'
    while True:
        taken = fetch(now)
        held += taken
        while len(held) >= 512 or (held and not taken):
            batch, held = held[:512], held[512:]
            if mode.endswith('entry'):
                entries = sorted((e for _, _, _, e in batch), key=entry_order)
                args = [now, entries[0], entries[-1]]
                for prefix, _, i, e in batch:
                    args += [prefix, e, i, 'null']
                function = 'sp_complete_entries'
            else:
                args = [now, fence]
                for prefix, n, i, _ in batch:
                    args += [prefix, n, i, 'null']
                function = 'sp_complete'
            assert set(r.execute_command('FCALL', function, 1, base, *args)) == {'1'}
            # The fence: the batch's first completion again finds its entry no longer pending
            # (one more call per 512 jobs, under 0.1 µs per job).
            first = args[:len(args) - 4 * (len(batch) - 1)]
            assert set(r.execute_command('FCALL', function, 1, base, *first)) == {'0'}
            done += len(batch)
        if not taken:
            break
    assert done == N
    stats = r.info('commandstats')
    drain = stats['cmdstat_fcall']['usec']
    if mode.startswith('direct'):
        drain += sum(stats[f'cmdstat_{c}']['usec'] for c in ('xreadgroup', 'hset', 'zadd'))
    return round(enqueue, 2), round(drain / N, 2)


print(mode, 'µs per job (enqueue, drain):', [run() for _ in range(4)])
r.flushdb()
r.execute_command('FUNCTION', 'DELETE', 'streams_probe')
