// graphile-worker under the benchmark protocol's W3 (../../../../shared/bench/PROTOCOL.md): one
// idle, warm worker of concurrency 16 in this process, and a producer in a process of its own
// (this script with `producer`) adding 2,000 jobs at 200/s with `addJob`; each job's pickup
// latency is the start of its handler less its enqueue time `t`. graphile-worker picks up by
// LISTEN/NOTIFY, with its default 2 s poll behind it. The bench's database, in a fresh
// `graphile_worker` schema.
//
//   npm ci && node w3.js [N]
//
// Prints one JSON line, as the bench does: p50, p99 and max in ms.
const { spawn } = require('child_process');
const { makeWorkerUtils } = require('graphile-worker');
const { connectionString, fresh, payload, nowUs, quiet, worker, report } = require('./store');

const n = parseInt(process.argv[2] || '2000', 10);

// The producer: one job every 5 ms from its start, each awaited.
async function produce() {
  const utils = await makeWorkerUtils({ connectionString, logger: quiet });
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const due = started + BigInt(i) * 5000000n;
    const pause = Number(due - process.hrtime.bigint()) / 1e6;
    if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
    await utils.addJob('send_welcome_email', payload(i), { maxAttempts: 3 });
  }
  await utils.release();
}

async function measure() {
  await fresh();
  const latencies = [];
  let warm = null;
  const runner = await worker(async (data) => {
    if (warm) {
      warm();
      return;
    }
    latencies.push(nowUs() - data.t);
  });
  // Warm: one job through, then the worker is idle again.
  const utils = await makeWorkerUtils({ connectionString, logger: quiet });
  const warmed = new Promise((resolve) => {
    warm = resolve;
  });
  await utils.addJob('send_welcome_email', payload(0));
  await warmed;
  await utils.release();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  warm = null;
  const producer = spawn(process.execPath, [__filename, String(n), 'producer'], { stdio: 'inherit' });
  const exited = new Promise((resolve) => producer.on('exit', resolve));
  const code = await exited;
  if (code !== 0) throw new Error(`the producer exited with ${code}`);
  const deadline = Date.now() + 30000;
  while (latencies.length < n) {
    if (Date.now() > deadline) throw new Error(`${latencies.length} of ${n} jobs picked up in 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await runner.stop();
  latencies.sort((a, b) => a - b);
  // As the bench reads them: the sample at (n - 1) * q, rounded.
  const at = (q) => latencies[Math.round((n - 1) * q)] / 1000;
  report('W3', n, {
    p50_ms: at(0.5),
    p99_ms: at(0.99),
    max_ms: latencies[n - 1] / 1000,
    notes: 'addJob at 200/s from a producer process, pickup by LISTEN/NOTIFY',
  });
}

(process.argv[3] === 'producer' ? produce() : measure()).catch((e) => {
  console.error(e);
  process.exit(1);
});
