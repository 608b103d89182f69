// BullMQ under the benchmark protocol's W2 (../../../../shared/bench/PROTOCOL.md): N jobs of
// queue `email` queued before timing starts (`addBulk`, 1,000 a call), then one worker of
// concurrency 16 with a no-op handler; the time from the worker's start until the store counts
// all N completed. Jobs carry the protocol's payload, 3 attempts and exponential backoff;
// completed jobs are kept (BullMQ's default). Redis db 5, which it flushes first.
//
//   npm install && node w2.js [N]
//
// Prints one JSON line, as the bench does.
const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');

const n = parseInt(process.argv[2] || '20000', 10);
const connection = { host: '127.0.0.1', port: 6379, db: 5 };

async function main() {
  const redis = new IORedis(connection);
  await redis.flushdb();
  const queue = new Queue('email', { connection });
  for (let i = 0; i < n; i += 1000) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + 1000); j++) {
      const data = { user_id: j, email: `user${j}@example.com`, t: Date.now() * 1000 };
      const opts = { attempts: 3, backoff: { type: 'exponential', delay: 1000 } };
      batch.push({ name: 'send_welcome_email', data, opts });
    }
    await queue.addBulk(batch);
  }
  const started = process.hrtime.bigint();
  const worker = new Worker('email', async () => {}, { connection, concurrency: 16 });
  while ((await queue.getCompletedCount()) < n) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  console.log(JSON.stringify({
    system: 'bullmq',
    backend: 'redis',
    workload: 'W2',
    n,
    concurrency: 16,
    jobs_per_s: Math.round((n / seconds) * 10) / 10,
    notes: 'completions counted by getCompletedCount every 5 ms; completed jobs kept (the default)',
  }));
  await worker.close();
  await queue.close();
  await redis.quit();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
