// `pnpm bench`: the runner against the bare database pattern and AWS Powertools idempotency on the same
// store, measured in one run, interleaved; bytes per op; DBOS; RSS over a million operations; footprint.
// Absolute numbers vary between machines: read the ratios.
//
//   node src/bench.mjs [--only=sqlite,postgres,dynamodb,bytes,dbos,rss,footprint] [--modes=raw,hand,runner,powertools]
//                      [--seconds=3] [--reps=3] [--workers=1,8] [--warmup=200] [--slice-ms=500] [--bytes-ops=5000]
//                      [--rss-ops=1000000] [--quick]
//
// BENCH_BASELINE=<a built checkout of another commit> adds the mode `before`: the runner and ledgers of
// that build, interleaved with this one's. PostgreSQL needs DATABASE_URL (`source .ci/test-env.sh`).
// `dynamodb`: the runner on the DynamoDB ledger against dynalite (in memory, in this process, on loopback),
// one worker: a JavaScript stand-in for DynamoDB, so the figure is the ledger's and runner's cost, not AWS's.
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDynalite } from './dynamodb.mjs';
import { postgresBytesPerOp, sqliteBytesPerOp } from './storage.mjs';
import {
  dropPostgres,
  postgresCheckpoint,
  postgresSettings,
  preparePostgres,
  prepareSqlite,
  SQLITE_PRAGMAS,
} from './workloads.mjs';

const args = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k, v ?? 'true'];
  }),
);
const quick = args.quick === 'true';
const only = new Set((args.only ?? 'sqlite,postgres,dynamodb,bytes,dbos,rss,footprint').split(','));
const seconds = Number(args.seconds ?? (quick ? 1 : 3));
const reps = Number(args.reps ?? (quick ? 1 : 3));
const pgWorkers = (args.workers ?? '1,8').split(',').map(Number);
// Read by every worker process (src/worker.mjs), which inherits this environment.
const warmupOps = Number(args.warmup ?? 200);
if (!(Number.isInteger(warmupOps) && warmupOps >= 0))
  throw new Error(`--warmup must be a whole number of ops ≥ 0, got ${args.warmup}`);
process.env.BENCH_WARMUP_OPS = String(warmupOps);
const rssOps = Number(args['rss-ops'] ?? (quick ? 50_000 : 1_000_000));
const MODES = (args.modes ?? `raw,hand,runner,${process.env.BENCH_BASELINE ? 'before,' : ''}powertools`).split(',');
const bytesOps = Number(args['bytes-ops'] ?? (quick ? 1000 : 5000));
// The modes take turns of this many ms (src/worker.mjs).
const sliceMs = Number(args['slice-ms'] ?? 500);
const here = (f) => fileURLToPath(new URL(f, import.meta.url));

const databaseUrl = process.env.DATABASE_URL;
if (only.has('postgres') || only.has('dbos')) {
  if (!databaseUrl) {
    console.error(
      'DATABASE_URL is not set: the PostgreSQL benchmarks need one (`source .ci/test-env.sh`), or run with --only=sqlite,rss',
    );
    process.exit(2);
  }
  const host = new URL(databaseUrl).hostname;
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host)) {
    console.error(`DATABASE_URL must point at loopback for the benchmarks, got ${host}`);
    process.exit(2);
  }
}

/**
 * Runs `workers` processes, each with every workload of `mix`, for `seconds` per workload, started
 * together and taking turns by the wall clock (src/worker.mjs); returns per workload, in `mix` order, its
 * ops/s (all workers' ops over the time the workers spent in it) and CPU µs per op of the workers.
 */
async function measure(mix, workers) {
  const children = Array.from({ length: workers }, () =>
    fork(here('./worker.mjs'), [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: ['--disable-warning=ExperimentalWarning'],
    }),
  );
  const next = (child) =>
    new Promise((resolve, reject) => {
      child.once('message', (m) => (m.error ? reject(new Error(m.error)) : resolve(m)));
      child.once('exit', (code) => code !== 0 && reject(new Error(`bench worker exited with ${code}`)));
    });
  try {
    const ready = children.map(next);
    for (const [w, c] of children.entries()) c.send({ mix: mix.map((cfg) => ({ ...cfg, worker: w })), sliceMs });
    await Promise.all(ready);
    const done = children.map(next);
    const start = Date.now();
    for (const c of children) c.send({ go: true, start, until: start + seconds * 1000 * mix.length });
    const results = await Promise.all(done);
    const closed = children.map(next);
    for (const c of children) c.send({ close: true });
    await Promise.all(closed);
    return mix.map((_, k) => {
      const sum = (f) => results.reduce((n, r) => n + f(r.spent[k]), 0);
      const ops = sum((s) => s.ops);
      return { opsPerSec: ops / (sum((s) => s.ms) / workers / 1000), cpuUsPerOp: sum((s) => s.cpuUs) / ops };
    });
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill();
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
const x = (r) => (Number.isFinite(r) ? `${r.toFixed(2)}×` : '-');
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

/**
 * One round: every mode in `order` on a fresh store of its own (a SQLite file, a PostgreSQL schema, a table
 * of `dynamo`, the dynalite server of the DynamoDB rounds).
 */
async function round(store, workers, order, dynamo) {
  if (store === 'dynamodb') {
    const mix = [];
    for (const mode of order) mix.push({ store, mode, endpoint: dynamo.endpoint, table: await dynamo.table() });
    return measure(mix, workers);
  }
  if (store === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'retrysafe-bench-'));
    try {
      const mix = order.map((mode) => ({ store, mode, sqlitePath: join(dir, `${mode}.db`) }));
      for (const cfg of mix) prepareSqlite(cfg.sqlitePath);
      return await measure(mix, workers);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const mix = order.map((mode) => ({ store, mode, databaseUrl, schema: `rs_bench_${randomBytes(4).toString('hex')}` }));
  try {
    for (const cfg of mix) await preparePostgres(databaseUrl, cfg.schema, cfg.mode);
    // What the previous round left dirty is written out now, not during this one.
    await postgresCheckpoint(databaseUrl);
    return await measure(mix, workers);
  } finally {
    for (const cfg of mix) await dropPostgres(databaseUrl, cfg.schema);
  }
}

/** Every mode `reps` times, interleaved; medians of ops/s and of the work per op. */
async function scenario(store, workers, modes = MODES, dynamo = null) {
  const runs = Object.fromEntries(modes.map((m) => [m, []]));
  for (let rep = 0; rep < reps; rep++) {
    // The order turns one place per round, so each mode follows each other one as often.
    const order = modes.map((_, i) => modes[(i + rep) % modes.length]);
    const results = await round(store, workers, order, dynamo);
    for (const [i, mode] of order.entries()) runs[mode].push(results[i]);
  }
  const opsPerSec = Object.fromEntries(modes.map((m) => [m, median(runs[m].map((r) => r.opsPerSec))]));
  // CPU µs per op does not swing with the machine's load as ops/s does.
  const cpuUs = Object.fromEntries(modes.map((m) => [m, median(runs[m].map((r) => r.cpuUsPerOp))]));
  // The same ratio within each round (modes measured in the same seconds): steadier on a machine whose
  // load swings between rounds.
  const perRound = Object.fromEntries(
    RATIOS.filter(([a, b]) => runs[a] && runs[b]).map(([a, b]) => [
      `${a}/${b}`,
      runs[a].map((r, i) => r.opsPerSec / runs[b][i].opsPerSec),
    ]),
  );
  return {
    store,
    workers,
    opsPerSec,
    cpuUs,
    perRound,
    runs: Object.fromEntries(modes.map((m) => [m, runs[m].map((r) => Math.round(r.opsPerSec))])),
    cpuUsRuns: Object.fromEntries(modes.map((m) => [m, runs[m].map((r) => Math.round(r.cpuUsPerOp))])),
  };
}

function printTable(head, body) {
  const table = [head, ...body];
  const widths = head.map((_, i) => Math.max(...table.map((row) => row[i].length)));
  for (const row of table) console.log(row.map((c, i) => c.padEnd(widths[i])).join('  '));
}

// Each ratio is read off modes measured in the same run; a missing mode prints '-'.
const RATIOS = [
  ['runner', 'raw'],
  ['hand', 'raw'],
  ['runner', 'hand'],
  ['powertools', 'raw'],
  ['runner', 'powertools'],
  ['before', 'powertools'],
  ['runner', 'before'],
].filter(([a, b]) => MODES.includes(a) && MODES.includes(b));

async function throughput() {
  console.log(
    `retrysafe bench — node ${process.version}, ${seconds}s per measurement after ${warmupOps} warm-up ops per worker, median of ${reps}, modes interleaved`,
  );
  console.log(
    `raw = INSERT claim + UPDATE complete (two transactions: the floor); hand = the ledger's content (record + receipt) written by hand in the same two statements;`,
  );
  console.log(
    `runner = runner.run + no-op adapter on the retrysafe ledger; before = the same on the BENCH_BASELINE build; powertools = makeIdempotent + no-op on the same store, payload validation on`,
  );
  console.log(`SQLite (every side): node:sqlite, ${SQLITE_PRAGMAS.join(', ')}`);
  if (only.has('postgres')) console.log(`PostgreSQL: ${await postgresSettings(databaseUrl)}`);
  console.log(`machine: ${cpus().length} cores, load average ${load()} at start\n`);
  const rows = [];
  if (only.has('sqlite')) rows.push(await scenario('sqlite', 1));
  if (only.has('postgres')) for (const w of pgWorkers) rows.push(await scenario('postgres', w));
  if (only.has('dynamodb')) {
    const dynamo = await startDynalite();
    rows.push(await scenario('dynamodb', 1, ['runner'], dynamo));
    await dynamo.close();
  }
  printTable(
    ['store', 'workers', ...MODES.map((m) => `${m} ops/s`), ...RATIOS.map(([a, b]) => `${a}/${b}`)],
    rows.map((r) => [
      r.store,
      String(r.workers),
      ...MODES.map((m) => fmt(r.opsPerSec[m])),
      ...RATIOS.map(([a, b]) => x(r.opsPerSec[a] / r.opsPerSec[b])),
    ]),
  );
  console.log(`\nRatios within each round: median [lowest – highest] of ${reps}`);
  printTable(
    ['store', 'workers', ...RATIOS.map(([a, b]) => `${a}/${b}`)],
    rows.map((r) => [
      r.store,
      String(r.workers),
      ...RATIOS.map(([a, b]) => {
        const xs = r.perRound[`${a}/${b}`];
        if (!xs) return '-';
        return `${x(median(xs))} [${x(Math.min(...xs))} – ${x(Math.max(...xs))}]`;
      }),
    ]),
  );
  console.log('\nCPU per op of the workers, µs (user + system), median');
  printTable(
    ['store', 'workers', ...MODES],
    rows.map((r) => [r.store, String(r.workers), ...MODES.map((m) => fmt(r.cpuUs[m]))]),
  );
  console.log(`load average ${load()} at the end of the throughput runs`);
  return rows;
}

/** Ledger bytes per operation: what each workload leaves in the store (SQLite) / writes to the WAL (PostgreSQL). */
async function bytes() {
  console.log(
    `\nBytes per op (${fmt(bytesOps)} ops after 200 warm-up; SQLite: file growth after a TRUNCATE checkpoint; PostgreSQL: WAL bytes after a CHECKPOINT, and table+index growth)`,
  );
  const out = { sqlite: {}, postgres: {} };
  for (const mode of MODES) out.sqlite[mode] = await sqliteBytesPerOp(mode, bytesOps);
  if (databaseUrl) for (const mode of MODES) out.postgres[mode] = await postgresBytesPerOp(mode, bytesOps, databaseUrl);
  const body = [['SQLite file bytes/op', ...MODES.map((m) => fmt(out.sqlite[m]))]];
  if (databaseUrl) {
    body.push(['PostgreSQL WAL bytes/op', ...MODES.map((m) => fmt(out.postgres[m].walPerOp))]);
    body.push(['PostgreSQL table+index bytes/op', ...MODES.map((m) => fmt(out.postgres[m].tablePerOp))]);
  }
  printTable(['', ...MODES], body);
  return out;
}

/** Runs `script` in a child process and returns the JSON of its last line of output. */
function child(script, argv) {
  return new Promise((resolve, reject) => {
    const c = fork(here(script), argv, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
    let out = '';
    c.stdout.on('data', (d) => (out += d));
    c.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split('\n').at(-1)))
        : reject(new Error(`${script} exited with ${code}`)),
    );
  });
}

async function dbos() {
  console.log(
    `\nDBOS: workflows/s, one create step each, without and with @retrysafe/dbos (ledger on DBOS's PostgreSQL)…`,
  );
  const d = await child('./dbos.mjs', [`--seconds=${seconds}`, `--reps=${reps}`]);
  console.log(
    `DBOS plain step: ${fmt(d.plain)} workflows/s; through @retrysafe/dbos: ${fmt(d.retrysafe)} workflows/s; ratio ${x(d.ratio)} (${d.concurrency} in flight, median of ${d.reps})`,
  );
  return d;
}

async function rss() {
  console.log(`\nRSS: ${fmt(rssOps)} sequential runner.run on the SQLite ledger…`);
  const r = await child('./rss.mjs', [String(rssOps)]);
  console.log(
    `RSS after ${fmt(r.ops)} ops (SQLite ledger, synchronous=${r.synchronous}): ${r.finalRssMb} MB (max ${r.maxRssMb} MB; samples ${r.samples.map((s) => `${s.ops / 1000}k:${s.rssMb}`).join(' ')}) — ${fmt(r.opsPerSec)} ops/s over ${r.seconds}s`,
  );
  return r;
}

async function footprint() {
  const { runFootprint, printFootprint } = await import('./footprint.mjs');
  console.log(
    '\nFootprint: packed tarballs installed with npm into empty projects (loopback only: no registry for our packages)…',
  );
  const f = await runFootprint({ quick });
  printFootprint(f);
  return f;
}

const result = {
  rows: only.has('sqlite') || only.has('postgres') || only.has('dynamodb') ? await throughput() : null,
  bytes: only.has('bytes') ? await bytes() : null,
  dbos: only.has('dbos') ? await dbos() : null,
  rss: only.has('rss') ? await rss() : null,
  footprint: only.has('footprint') ? await footprint() : null,
};
console.log(`\nJSON ${JSON.stringify(result)}`);
