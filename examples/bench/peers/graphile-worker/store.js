// What w2.js and w3.js share: the bench's database, a fresh graphile-worker schema in it, the
// protocol's job, a worker of concurrency 16, and the JSON line a run prints.
const { run, runMigrations, Logger } = require('graphile-worker');
const { Pool } = require('pg');

const connectionString = 'postgres://postgres@127.0.0.1:5432/bench_jobs';

// Drops graphile-worker's schema and migrates a new one, so that each run starts empty.
async function fresh() {
  const pool = new Pool({ connectionString, max: 1 });
  await pool.query('DROP SCHEMA IF EXISTS graphile_worker CASCADE');
  await pool.end();
  await runMigrations({ connectionString, logger: quiet });
}

// The protocol's payload; `t` is the enqueue time in µs of the machine's monotonic clock,
// which every process reads alike.
function payload(i) {
  return { user_id: i, email: `user${i}@example.com`, t: nowUs() };
}

// µs of CLOCK_MONOTONIC (libuv's hrtime).
function nowUs() {
  return Number(process.hrtime.bigint() / 1000n);
}

// A logger that keeps graphile-worker's info lines out of the JSON output (its warnings and
// errors go to stderr).
const quiet = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.error(message);
});

// Starts one worker of concurrency 16 whose handler of the protocol's job is `handler` (given
// the job's payload), with a connection for each of its places (graphile-worker warns of a pool
// smaller than its concurrency).
function worker(handler) {
  return run({
    connectionString,
    concurrency: 16,
    maxPoolSize: 16,
    noHandleSignals: true,
    logger: quiet,
    taskList: { send_welcome_email: handler },
  });
}

// Prints the run's one JSON line, as the bench prints its own: `figures` and `notes`.
function report(workload, n, figures) {
  console.log(JSON.stringify({
    system: 'graphile-worker',
    version: require('graphile-worker/package.json').version,
    backend: 'postgres',
    workload,
    n,
    concurrency: 16,
    ...figures,
  }));
}

module.exports = { connectionString, fresh, payload, nowUs, quiet, worker, report };
