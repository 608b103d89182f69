# The cold cost of a single enqueue on the Streams layout of streams.lua with a worker blocked
# in XREADGROUP, which Redis serves in the enqueue's own turn: 200 enqueues 5 ms apart (as W3's
# producer sends them), each one's time from Redis' slow log; the p50 of 3 runs. Database 7.
import json, threading, time, uuid, redis

r = redis.Redis(db=7, decode_responses=True)
library = open(__file__.replace('pickup.py', 'streams.lua')).read()
r.execute_command('FUNCTION', 'LOAD', 'REPLACE', library)
base, n = '{probe:email}:', 200
slowlog = {k: r.config_get(k)[k] for k in ('slowlog-log-slower-than', 'slowlog-max-len')}
r.config_set('slowlog-log-slower-than', 0)
r.config_set('slowlog-max-len', 1000)


def worker(heard):
    blocked = redis.Redis(db=7, decode_responses=True)
    while len(heard) < n:
        if blocked.xreadgroup('g', 'w1', {base + 'stream': '>'}, count=1, block=2000):
            heard.append(time.time())


def run():
    r.flushdb()
    r.xgroup_create(base + 'stream', 'g', id='0', mkstream=True)
    heard = []
    reader = threading.Thread(target=worker, args=(heard,))
    reader.start()
    time.sleep(0.2)
    r.slowlog_reset()
    for i in range(n):
        time.sleep(0.005)
        now = str(int(time.time() * 1e6))
        payload = json.dumps({"user_id": i, "email": f"user{i}@example.com", "t": int(now)})
        r.execute_command('FCALL', 'sp_enqueue', 1, base, now, uuid.uuid4().hex, payload,
                          '3|e1000||bench_email')
    reader.join()
    took = sorted(e['duration'] for e in r.slowlog_get(1000) if 'sp_enqueue' in str(e['command']))
    return took[len(took) // 2]


print('enqueue with a blocked reader, cold, µs (slow log p50):', [run() for _ in range(3)])
for k, v in slowlog.items():
    r.config_set(k, v)
r.flushdb()
r.execute_command('FUNCTION', 'DELETE', 'streams_probe')
