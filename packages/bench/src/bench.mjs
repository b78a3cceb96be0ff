// `pnpm bench`: the runner's cost against the raw database pattern measured in the same run, and
// against AWS Powertools idempotency on the same store; then RSS after 1M operations on the SQLite
// ledger. Absolute numbers vary between machines: read the ratios.
//
//   node src/bench.mjs [--only=sqlite,postgres,dbos,rss] [--seconds=3] [--reps=3] [--workers=1,8] [--rss-ops=1000000] [--quick]
//
// PostgreSQL needs DATABASE_URL (`source .ci/start-postgres.sh` starts one on 127.0.0.1).
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropPostgres, postgresSettings, preparePostgres, prepareSqlite, SQLITE_PRAGMAS } from './workloads.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const [k, v] = a.replace(/^--/, '').split('=');
  return [k, v ?? 'true'];
}));
const quick = args.quick === 'true';
const only = new Set((args.only ?? 'sqlite,postgres,dbos,rss').split(','));
const seconds = Number(args.seconds ?? (quick ? 1 : 3));
const reps = Number(args.reps ?? (quick ? 1 : 3));
const pgWorkers = (args.workers ?? '1,8').split(',').map(Number);
const rssOps = Number(args['rss-ops'] ?? (quick ? 50_000 : 1_000_000));
const MODES = (args.modes ?? 'raw,runner,powertools').split(',');
const here = (f) => fileURLToPath(new URL(f, import.meta.url));

const databaseUrl = process.env.DATABASE_URL;
if (only.has('postgres') || only.has('dbos')) {
  if (!databaseUrl) {
    console.error('DATABASE_URL is not set: the PostgreSQL benchmarks need one (`source .ci/start-postgres.sh`), or run with --only=sqlite,rss');
    process.exit(2);
  }
  const host = new URL(databaseUrl).hostname;
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host)) {
    console.error(`DATABASE_URL must point at loopback for the benchmarks, got ${host}`);
    process.exit(2);
  }
}

/** Runs `workers` processes of one workload for `seconds`, started together; returns ops/s. */
async function measure(cfgFor, workers) {
  const children = Array.from({ length: workers }, (_, w) => fork(here('./worker.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  const next = (child) => new Promise((resolve, reject) => {
    child.once('message', (m) => (m.error ? reject(new Error(m.error)) : resolve(m)));
    child.once('exit', (code) => code !== 0 && reject(new Error(`bench worker exited with ${code}`)));
  });
  try {
    const ready = children.map(next);
    children.forEach((c, w) => c.send(cfgFor(w)));
    await Promise.all(ready);
    const done = children.map(next);
    const until = Date.now() + seconds * 1000;
    children.forEach((c) => c.send({ go: true, until }));
    const results = await Promise.all(done);
    const ops = results.reduce((n, r) => n + r.ops, 0);
    const window = (Math.max(...results.map((r) => r.endedAt)) - Math.min(...results.map((r) => r.startedAt))) / 1000;
    return ops / window;
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill();
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function scenario(store, workers) {
  const runs = Object.fromEntries(MODES.map((m) => [m, []]));
  for (let rep = 0; rep < reps; rep++) {
    // Interleaved so drift (page cache, WAL size, thermal) hits every mode alike; fresh store each time.
    for (const mode of MODES) {
      if (store === 'sqlite') {
        const dir = mkdtempSync(join(tmpdir(), 'retrysafe-bench-'));
        try {
          const sqlitePath = join(dir, 'bench.db');
          prepareSqlite(sqlitePath);
          runs[mode].push(await measure((w) => ({ store, mode, sqlitePath, worker: w }), workers));
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      } else {
        const schema = `rs_bench_${randomBytes(4).toString('hex')}`;
        await preparePostgres(databaseUrl, schema);
        try {
          runs[mode].push(await measure((w) => ({ store, mode, databaseUrl, schema, worker: w }), workers));
        } finally {
          await dropPostgres(databaseUrl, schema);
        }
      }
    }
  }
  const m = Object.fromEntries(MODES.map((k) => [k, median(runs[k])]));
  return { store, workers, opsPerSec: m, runs, ratio: { runnerToRaw: m.runner / m.raw, powertoolsToRaw: m.powertools / m.raw, runnerToPowertools: m.runner / m.powertools } };
}

const fmt = (n) => Math.round(n).toLocaleString('en-US');
const x = (r) => `${r.toFixed(2)}×`;
const rows = [];
console.log(`retrysafe bench — node ${process.version}, ${seconds}s per measurement, median of ${reps}, modes interleaved`);
console.log(`raw = INSERT claim + UPDATE complete (two transactions); runner = runner.run + no-op adapter on the retrysafe ledger; powertools = makeIdempotent + no-op on the same store`);
const load = () => loadavg().map((l) => l.toFixed(1)).join(' ');
console.log(`SQLite (all three sides): ${SQLITE_PRAGMAS.join(', ')}`);
if (only.has('postgres')) console.log(`PostgreSQL: ${await postgresSettings(databaseUrl)}`);
console.log(`machine: ${cpus().length} cores, load average ${load()} at start\n`);
if (only.has('sqlite')) rows.push(await scenario('sqlite', 1));
if (only.has('postgres')) for (const w of pgWorkers) rows.push(await scenario('postgres', w));

if (rows.length) {
  const head = ['store', 'workers', 'raw ops/s', 'runner ops/s', 'powertools ops/s', 'runner/raw', 'powertools/raw', 'runner/powertools'];
  const table = [head, ...rows.map((r) => [r.store, String(r.workers), fmt(r.opsPerSec.raw ?? NaN), fmt(r.opsPerSec.runner ?? NaN), fmt(r.opsPerSec.powertools ?? NaN), x(r.ratio.runnerToRaw), x(r.ratio.powertoolsToRaw), x(r.ratio.runnerToPowertools)])];
  const widths = head.map((_, i) => Math.max(...table.map((row) => row[i].length)));
  for (const row of table) console.log(row.map((c, i) => c.padEnd(widths[i])).join('  '));
}

if (rows.length) console.log(`load average ${load()} at the end of the throughput runs`);

// DBOS: workflows/s of one DBOS app on the same PostgreSQL, one step each, with and without @retrysafe/dbos (src/dbos.mjs).
let dbos = null;
if (only.has('dbos')) {
  console.log(`\nDBOS: workflows/s, one create step each, without and with @retrysafe/dbos (ledger on DBOS's PostgreSQL)…`);
  dbos = await new Promise((resolve, reject) => {
    const child = fork(here('./dbos.mjs'), [`--seconds=${seconds}`, `--reps=${reps}`], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1))) : reject(new Error(`dbos bench exited with ${code}`))));
  });
  console.log(`DBOS plain step: ${fmt(dbos.plain)} workflows/s; through @retrysafe/dbos: ${fmt(dbos.retrysafe)} workflows/s; ratio ${x(dbos.ratio)} (${dbos.concurrency} in flight, median of ${dbos.reps})`);
}

let rss = null;
if (only.has('rss')) {
  console.log(`\nRSS: ${rssOps.toLocaleString('en-US')} sequential runner.run on the SQLite ledger…`);
  rss = await new Promise((resolve, reject) => {
    const child = fork(here('./rss.mjs'), [String(rssOps)], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1))) : reject(new Error(`rss run exited with ${code}`))));
  });
  console.log(`RSS after ${rss.ops.toLocaleString('en-US')} ops (SQLite ledger, synchronous=${rss.synchronous}): ${rss.finalRssMb} MB (max ${rss.maxRssMb} MB; samples ${rss.samples.map((s) => `${s.ops / 1000}k:${s.rssMb}`).join(' ')}) — ${fmt(rss.opsPerSec)} ops/s over ${rss.seconds}s`);
}
console.log(`\nJSON ${JSON.stringify({ rows, dbos, rss })}`);
