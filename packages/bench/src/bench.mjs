// `pnpm bench`: the runner's cost against the raw database pattern measured in the same run, and
// against AWS Powertools idempotency on the same store; then RSS after 1M operations on the SQLite
// ledger. Absolute numbers vary between machines: read the ratios.
//
//   node src/bench.mjs [--only=sqlite,drivers,postgres,dbos,rss,footprint] [--seconds=3] [--reps=3] [--workers=1,8] [--rss-ops=1000000] [--quick]
//
// `drivers`: raw pattern and runner on each SQLite driver this Node can load, side by side (both need
// Node >= 22.13 and a better-sqlite3 built for it). `footprint`: install size, package count and cold
// import time of core + an adapter, core + PostgreSQL and the CLI (src/footprint.mjs).
//
// PostgreSQL needs DATABASE_URL (`source .ci/start-postgres.sh` starts one on 127.0.0.1).
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { availableSqliteDrivers, defaultSqliteDriver, dropPostgres, postgresSettings, preparePostgres, prepareSqlite, SQLITE_PRAGMAS } from './workloads.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const [k, v] = a.replace(/^--/, '').split('=');
  return [k, v ?? 'true'];
}));
const quick = args.quick === 'true';
const only = new Set((args.only ?? 'sqlite,drivers,postgres,dbos,rss,footprint').split(','));
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

async function scenario(store, workers, driver = null, modes = MODES) {
  const runs = Object.fromEntries(modes.map((m) => [m, []]));
  for (let rep = 0; rep < reps; rep++) {
    // Interleaved so drift (page cache, WAL size, thermal) hits every mode alike; fresh store each time.
    for (const mode of modes) {
      if (store === 'sqlite') {
        const dir = mkdtempSync(join(tmpdir(), 'retrysafe-bench-'));
        try {
          const sqlitePath = join(dir, 'bench.db');
          prepareSqlite(sqlitePath, driver);
          runs[mode].push(await measure((w) => ({ store, mode, sqlitePath, worker: w, driver }), workers));
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
  const m = Object.fromEntries(modes.map((k) => [k, median(runs[k])]));
  return { store: driver ? `${store} (${driver})` : store, driver, workers, opsPerSec: m, runs, ratio: { runnerToRaw: m.runner / m.raw, powertoolsToRaw: m.powertools / m.raw, runnerToPowertools: m.runner / m.powertools } };
}

const fmt = (n) => Math.round(n).toLocaleString('en-US');
const x = (r) => `${r.toFixed(2)}×`;
const rows = [];
console.log(`retrysafe bench — node ${process.version}, ${seconds}s per measurement, median of ${reps}, modes interleaved`);
console.log(`raw = INSERT claim + UPDATE complete (two transactions); runner = runner.run + no-op adapter on the retrysafe ledger; powertools = makeIdempotent + no-op on the same store`);
const load = () => loadavg().map((l) => l.toFixed(1)).join(' ');
console.log(`SQLite (all three sides): driver ${await defaultSqliteDriver()}, ${SQLITE_PRAGMAS.join(", ")}`);
if (only.has('postgres')) console.log(`PostgreSQL: ${await postgresSettings(databaseUrl)}`);
console.log(`machine: ${cpus().length} cores, load average ${load()} at start\n`);
const sqliteDriver = await defaultSqliteDriver();
if (only.has('sqlite')) rows.push(await scenario('sqlite', 1, sqliteDriver));
if (only.has('postgres')) for (const w of pgWorkers) rows.push(await scenario('postgres', w));

if (rows.length) {
  const head = ['store', 'workers', 'raw ops/s', 'runner ops/s', 'powertools ops/s', 'runner/raw', 'powertools/raw', 'runner/powertools'];
  const table = [head, ...rows.map((r) => [r.store, String(r.workers), fmt(r.opsPerSec.raw ?? NaN), fmt(r.opsPerSec.runner ?? NaN), fmt(r.opsPerSec.powertools ?? NaN), x(r.ratio.runnerToRaw), x(r.ratio.powertoolsToRaw), x(r.ratio.runnerToPowertools)])];
  const widths = head.map((_, i) => Math.max(...table.map((row) => row[i].length)));
  for (const row of table) console.log(row.map((c, i) => c.padEnd(widths[i])).join('  '));
}

if (rows.length) console.log(`load average ${load()} at the end of the throughput runs`);

// The two SQLite drivers side by side: raw pattern and runner on each, interleaved per rep.
let drivers = null;
if (only.has('drivers')) {
  const names = await availableSqliteDrivers();
  console.log(`\nSQLite drivers loadable here: ${names.join(', ')}`);
  const runsBy = Object.fromEntries(names.map((d) => [d, { raw: [], runner: [] }]));
  for (let rep = 0; rep < reps; rep++) {
    for (const d of names) {
      for (const mode of ['raw', 'runner']) {
        const r = await scenarioOnce(d, mode);
        runsBy[d][mode].push(r);
      }
    }
  }
  drivers = Object.fromEntries(names.map((d) => [d, { raw: median(runsBy[d].raw), runner: median(runsBy[d].runner), runs: runsBy[d] }]));
  for (const d of names) console.log(`${d.padEnd(15)} raw ${fmt(drivers[d].raw)} ops/s  runner ${fmt(drivers[d].runner)} ops/s  runner/raw ${x(drivers[d].runner / drivers[d].raw)}`);
  if (drivers['node:sqlite'] && drivers['better-sqlite3']) {
    const n = drivers['node:sqlite'], b = drivers['better-sqlite3'];
    console.log(`node:sqlite / better-sqlite3: runner ${x(n.runner / b.runner)}, raw ${x(n.raw / b.raw)}`);
  } else {
    console.log('only one driver loads here: the side-by-side ratio needs Node >= 22.13 with better-sqlite3 built for it');
  }
}

async function scenarioOnce(driver, mode) {
  const dir = mkdtempSync(join(tmpdir(), 'retrysafe-bench-'));
  try {
    const sqlitePath = join(dir, 'bench.db');
    prepareSqlite(sqlitePath, driver);
    return await measure((w) => ({ store: 'sqlite', mode, sqlitePath, worker: w, driver }), 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let footprint = null;
if (only.has('footprint')) {
  const { runFootprint, printFootprint } = await import('./footprint.mjs');
  console.log('\nFootprint: packed tarballs installed with npm into empty projects (loopback only: no registry for our packages)…');
  footprint = await runFootprint({ quick });
  printFootprint(footprint);
}

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
console.log(`\nJSON ${JSON.stringify({ rows, drivers, dbos, rss, footprint })}`);
