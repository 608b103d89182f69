// graphile-worker under the benchmark protocol's W2 (../../../../shared/bench/PROTOCOL.md): N
// jobs queued before timing starts (`add_jobs`, 1,000 a call; no `queue_name`, which in
// graphile-worker runs its jobs one at a time), then one worker of concurrency 16 with a no-op
// handler; the time from the worker's start until the store holds no job (graphile-worker
// deletes a job when it completes). Jobs carry the protocol's payload and 3 attempts
// (graphile-worker's backoff is exponential). The bench's database, in a fresh
// `graphile_worker` schema.
//
//   npm ci && node w2.js [N]
//
// Prints one JSON line, as the bench does.
const { Pool } = require('pg');
const { connectionString, fresh, payload, worker, report } = require('./store');

const n = parseInt(process.argv[2] || '20000', 10);

async function main() {
  await fresh();
  const pool = new Pool({ connectionString, max: 1 });
  for (let i = 0; i < n; i += 1000) {
    const specs = [];
    for (let j = i; j < Math.min(n, i + 1000); j++) specs.push(payload(j));
    await pool.query(
      `SELECT graphile_worker.add_jobs(array(
         SELECT ('send_welcome_email', p, NULL, NULL, 3, NULL, NULL, NULL)::graphile_worker.job_spec
         FROM json_array_elements($1::json) AS p))`,
      [JSON.stringify(specs)],
    );
  }
  const started = process.hrtime.bigint();
  const runner = await worker(async () => {});
  for (;;) {
    const { rows } = await pool.query('SELECT count(*)::int AS left FROM graphile_worker.jobs');
    if (rows[0].left === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  report('W2', n, {
    jobs_per_s: Math.round((n / seconds) * 10) / 10,
    notes: 'the store counted every 5 ms; completed jobs deleted (the default)',
  });
  await runner.stop();
  await pool.end();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
