// `pnpm bench`: the runner's cost against the raw database pattern measured in the same run, and
// against AWS Powertools idempotency on the same store; then RSS after 1M operations on the SQLite
// ledger. Absolute numbers vary between machines: read the ratios.
//
//   node src/bench.mjs [--only=sqlite,postgres,dynamodb,bytes,wal-floor,scale,drivers,dbos,rss,footprint] [--part=instructions] [--seconds=3] [--reps=3]
//                      [--workers=1,8] [--rss-ops=1000000] [--scale=1000,100000,1000000] [--quick]
//                      [--windows=1200,3200,6200] [--where] [--lines=262144] [--instr-stores=sqlite,postgres]   (with --part=instructions)
//                      [--warmup=200]   (ops each worker runs before its window: 200 keeps a short-lived
//                      process's JIT warm-up in the window; a few thousand measures the steady state)
//
// `bytes`: ledger bytes per op (SQLite file growth, PostgreSQL WAL bytes). `wal-floor`: the WAL bytes the same
// content costs on PostgreSQL in the smallest layouts a ledger could have (src/wal-floor.mjs). `scale`: ops/s with 1k, 100k
// and 1M operations already stored. `--part=instructions` (on demand, needs valgrind): instructions per
// op under callgrind, differences of run lengths so start-up cancels, a warm and a steady window
// (src/instructions.mjs); `--where` splits the steady window by where the instructions go.
//
// `drivers`: raw pattern and runner on node:sqlite, the ledger's one driver. `footprint`: install size, package count and cold
// import time of core + an adapter, core + PostgreSQL and the CLI (src/footprint.mjs).
//
// PostgreSQL needs DATABASE_URL (`source .ci/start-postgres.sh` starts one on 127.0.0.1).
// `dynamodb`: the runner on the DynamoDB ledger against dynalite (in memory, in this process, on loopback),
// one worker: a JavaScript stand-in for DynamoDB, so the figure is the ledger's and runner's cost, not AWS's.
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { postgresBytesPerOp, prefillPostgres, prefillSqlite, sqliteBytesPerOp } from './storage.mjs';
import { startDynalite } from './dynamodb.mjs';
import { layoutHeadroom } from './report.mjs';
import { printWalFloor, runWalFloor } from './wal-floor.mjs';
import { availableSqliteDrivers, defaultSqliteDriver, dropPostgres, POSTGRES_ONLY, postgresCheckpoint, postgresServerCpu, postgresSettings, preparePostgres, prepareSqlite, setupWorkload, SQLITE_PRAGMAS } from './workloads.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const [k, v] = a.replace(/^--/, '').split('=');
  return [k, v ?? 'true'];
}));
const quick = args.quick === 'true';
const only = new Set((args.only ?? args.part ?? 'sqlite,postgres,dynamodb,bytes,wal-floor,scale,drivers,dbos,rss,footprint').split(','));
const seconds = Number(args.seconds ?? (quick ? 1 : 3));
const reps = Number(args.reps ?? (quick ? 1 : 3));
const pgWorkers = (args.workers ?? '1,8').split(',').map(Number);
// Read by every worker process (src/worker.mjs), which inherits this environment.
const warmupOps = Number(args.warmup ?? 200);
if (!(Number.isInteger(warmupOps) && warmupOps >= 0)) throw new Error(`--warmup must be a whole number of ops ≥ 0, got ${args.warmup}`);
process.env.BENCH_WARMUP_OPS = String(warmupOps);
const rssOps = Number(args['rss-ops'] ?? (quick ? 50_000 : 1_000_000));
const MODES = (args.modes ?? 'raw,hand,layout,runner,strict,powertools').split(',');
/** The modes measured on SQLite (and the memory ledger): all but the PostgreSQL-only ones (`layout`). */
const SQLITE_MODES = MODES.filter((m) => !POSTGRES_ONLY.has(m));
const scaleRows = (args.scale ?? (quick ? '1000,100000' : '1000,100000,1000000')).split(',').map(Number);
const bytesOps = Number(args['bytes-ops'] ?? (quick ? 1000 : 5000));
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

/**
 * Runs `workers` processes of one workload for `seconds`, started together; returns ops/s, and per op
 * over all workers: CPU µs (user + system) and read/write system calls (null off Linux).
 */
async function measure(cfgFor, workers, serverCpu = null) {
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
    const server0 = serverCpu?.();
    children.forEach((c) => c.send({ go: true, until }));
    const results = await Promise.all(done);
    const server1 = serverCpu?.();
    const closed = children.map(next);
    children.forEach((c) => c.send({ close: true }));
    await Promise.all(closed);
    const ops = results.reduce((n, r) => n + r.ops, 0);
    const window = (Math.max(...results.map((r) => r.endedAt)) - Math.min(...results.map((r) => r.startedAt))) / 1000;
    const sum = (f) => results.reduce((n, r) => n + f(r), 0);
    const io = results.every((r) => r.io) ? { reads: sum((r) => r.io.reads) / ops, writes: sum((r) => r.io.writes) / ops } : null;
    const serverUsPerOp = server0 != null && server1 != null ? (server1 - server0) / ops : null;
    return { opsPerSec: ops / window, cpuUsPerOp: sum((r) => r.cpuUs) / ops, serverUsPerOp, io };
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill();
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Before a measurement on a store that should already hold `rows` operations: one op seeds each table, then clones fill it. */
async function seedAndPrefill(cfg, rows) {
  if (!rows) return;
  const w = await setupWorkload({ ...cfg, worker: 'seed' });
  await w.op(0);
  await w.close();
  if (cfg.store === 'sqlite') prefillSqlite(cfg.sqlitePath, cfg.driver, rows);
  else await prefillPostgres(cfg.databaseUrl, cfg.schema, rows);
}

async function scenario(store, workers, driver = null, modes = MODES, rows = 0, rounds = reps) {
  const runs = Object.fromEntries(modes.map((m) => [m, []]));
  const work = Object.fromEntries(modes.map((m) => [m, []]));
  const take = (mode, r) => (runs[mode].push(r.opsPerSec), work[mode].push(r));
  for (let rep = 0; rep < rounds; rep++) {
    // Interleaved so drift (page cache, WAL size, thermal) hits every mode alike; fresh store each time.
    // The order turns one place per round, so each mode follows each other one as often: in a fixed
    // order the mode after the heaviest writer paid for its WAL and dropped schema (PostgreSQL, 8
    // workers: runner ÷ before read 0.86× in one order and 1.01× in the other, same builds).
    for (const mode of modes.map((_, i) => modes[(i + rep) % modes.length])) {
      const table = store === 'dynamodb' ? await dynamo.table() : null;
      if (store === 'dynamodb') {
        take(mode, await measure((w) => ({ store, mode, endpoint: dynamo.endpoint, table, worker: w }), workers));
      } else if (store === 'sqlite') {
        const dir = mkdtempSync(join(tmpdir(), 'retrysafe-bench-'));
        try {
          const sqlitePath = join(dir, 'bench.db');
          prepareSqlite(sqlitePath, driver);
          await seedAndPrefill({ store, mode, sqlitePath, driver }, rows);
          take(mode, await measure((w) => ({ store, mode, sqlitePath, worker: w, driver }), workers));
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      } else {
        const schema = `rs_bench_${randomBytes(4).toString('hex')}`;
        await preparePostgres(databaseUrl, schema, mode);
        try {
          await seedAndPrefill({ store, mode, databaseUrl, schema }, rows);
          // What the previous measurement left dirty is written out now, not during this one.
          await postgresCheckpoint(databaseUrl);
          take(mode, await measure((w) => ({ store, mode, databaseUrl, schema, worker: w }), workers, serverCpu));
        } finally {
          await dropPostgres(databaseUrl, schema);
        }
      }
    }
  }
  const m = Object.fromEntries(modes.map((k) => [k, median(runs[k])]));
  // Per-op work, medians over the rounds: CPU µs and system calls do not swing with the machine's load as ops/s does.
  const perOp = Object.fromEntries(modes.map((k) => [k, {
    cpuUs: median(work[k].map((r) => r.cpuUsPerOp)),
    serverUs: work[k].every((r) => r.serverUsPerOp !== null) ? median(work[k].map((r) => r.serverUsPerOp)) : null,
    reads: work[k].every((r) => r.io) ? median(work[k].map((r) => r.io.reads)) : null,
    writes: work[k].every((r) => r.io) ? median(work[k].map((r) => r.io.writes)) : null,
  }]));
  return {
    store: driver ? `${store} (${driver})` : store, driver, workers, rows, opsPerSec: m, perOp, runs,
    ratio: { layoutToPowertools: m.layout / m.powertools, runnerToLayout: m.runner / m.layout, runnerToRaw: m.runner / m.raw, handToRaw: m.hand / m.raw, runnerToHand: m.runner / m.hand, powertoolsToRaw: m.powertools / m.raw, runnerToPowertools: m.runner / m.powertools, strictToPowertools: m.strict / m.powertools, strictToRaw: m.strict / m.raw },
  };
}

const fmt = (n) => Math.round(n).toLocaleString('en-US');
const x = (r) => `${r.toFixed(2)}×`;
const signed = (v) => `${v >= 0 ? '+' : '−'}${Math.abs(v).toFixed(0)}`;
const rows = [];
console.log(`retrysafe bench — node ${process.version}, ${seconds}s per measurement after ${warmupOps} warm-up ops per worker, median of ${reps}, modes interleaved`);
console.log(`raw = INSERT claim + UPDATE complete (two transactions: the floor); hand = the ledger's content (record + receipt) written by hand in the same two statements;`);
console.log(`runner = runner.run + no-op adapter on the retrysafe ledger; powertools = makeIdempotent + no-op on the same store, payload validation on`);
console.log(`layout (PostgreSQL) = the same content in the ledger's own table, by the two statements the ledger sends, driven by hand (no runner code)`);
console.log(`hand/raw = what storing the ledger's content costs; runner/hand = what the runner's code and the ledger's layout cost on top;`);
console.log(`layout/powertools = what the ledger's layout leaves the runner against Powertools; runner/layout = what the runner's own code costs`);
const load = () => loadavg().map((l) => l.toFixed(1)).join(' ');
console.log(`SQLite (all three sides): driver ${await defaultSqliteDriver()}, ${SQLITE_PRAGMAS.join(", ")}`);
if (only.has('postgres')) console.log(`PostgreSQL: ${await postgresSettings(databaseUrl)}`);
console.log(`machine: ${cpus().length} cores, load average ${load()} at start\n`);
const sqliteDriver = await defaultSqliteDriver();
// The PostgreSQL server's CPU (its postmaster's children: backends, WAL writer, checkpointer …), when it runs here.
const serverCpu = only.has('postgres') ? await postgresServerCpu(databaseUrl) : null;
if (only.has('sqlite')) rows.push(await scenario('sqlite', 1, sqliteDriver, SQLITE_MODES));
if (only.has('postgres')) for (const w of pgWorkers) rows.push(await scenario('postgres', w));
const dynamo = only.has('dynamodb') ? await startDynalite() : null;
if (dynamo) rows.push(await scenario('dynamodb', 1, null, ['runner']));
await dynamo?.close();

function printTable(head, body) {
  const table = [head, ...body];
  const widths = head.map((_, i) => Math.max(...table.map((row) => row[i].length)));
  for (const row of table) console.log(row.map((c, i) => c.padEnd(widths[i])).join('  '));
}
const throughputRow = (r) => [r.store, String(r.workers), ...(r.rows ? [fmt(r.rows)] : []), fmt(r.opsPerSec.raw ?? NaN), fmt(r.opsPerSec.hand ?? NaN), fmt(r.opsPerSec.layout ?? NaN), fmt(r.opsPerSec.runner ?? NaN), fmt(r.opsPerSec.strict ?? NaN), fmt(r.opsPerSec.powertools ?? NaN),
  x(r.ratio.runnerToRaw), x(r.ratio.handToRaw), x(r.ratio.runnerToHand), x(r.ratio.layoutToPowertools), x(r.ratio.runnerToLayout), x(r.ratio.powertoolsToRaw), x(r.ratio.runnerToPowertools), x(r.ratio.strictToRaw), x(r.ratio.strictToPowertools)];
const THROUGHPUT_HEAD = ['raw ops/s', 'hand ops/s', 'layout ops/s', 'runner ops/s', 'strict ops/s', 'powertools ops/s', 'runner/raw', 'hand/raw', 'runner/hand', 'layout/powertools', 'runner/layout', 'powertools/raw', 'runner/powertools', 'strict/raw', 'strict/powertools'];
if (rows.length) printTable(['store', 'workers', ...THROUGHPUT_HEAD], rows.map(throughputRow));
// What the ledger's layout leaves for the runner's code against Powertools and 0.7× raw (PostgreSQL, with layout, runner and powertools measured).
for (const r of rows) if (r.opsPerSec.layout && r.opsPerSec.powertools && r.opsPerSec.runner) console.log(`${r.store}, ${r.workers} worker(s): ${layoutHeadroom(r)}`);
// With BENCH_BASELINE and --modes=…,before: the runner on this build against the baseline build, interleaved.
for (const r of rows) if (r.opsPerSec.before) console.log(`${r.store}, ${r.workers} worker(s): runner ${fmt(r.opsPerSec.runner)} ops/s, baseline build ${fmt(r.opsPerSec.before)} ops/s: ${x(r.opsPerSec.runner / r.opsPerSec.before)}`);

if (rows.length) {
  // What each op costs the machine: ops/s at 8 workers on 2 cores is CPU-bound, and this says on which side.
  const per = (v) => (v === null || v === undefined ? 'n/a' : fmt(v));
  const shown = MODES.filter((m) => rows.some((r) => r.perOp[m]));
  console.log(`\nCPU per op, µs (workers: user + system of all worker processes; server: the PostgreSQL server's processes, from /proc, ${serverCpu ? 'read around each window' : 'n/a: not on this machine'})`);
  printTable(['store', 'workers', ...shown.flatMap((m) => [`${m} workers`, `${m} server`])],
    rows.map((r) => [r.store, String(r.workers), ...shown.flatMap((m) => [per(r.perOp[m]?.cpuUs), r.store === 'postgres' ? per(r.perOp[m]?.serverUs) : '-'])]));
  console.log(`load average ${load()} at the end of the throughput runs`);
}

// Ledger bytes per operation: what each workload leaves in the store (SQLite) / writes to the WAL (PostgreSQL).
let bytes = null;
if (only.has('bytes')) {
  console.log(`\nBytes per op (${fmt(bytesOps)} ops after ${200} warm-up; SQLite: file growth after a TRUNCATE checkpoint; PostgreSQL: WAL bytes after a CHECKPOINT, and table+index growth)`);
  bytes = { sqlite: {}, postgres: {} };
  for (const mode of SQLITE_MODES) bytes.sqlite[mode] = await sqliteBytesPerOp(mode, bytesOps, sqliteDriver);
  if (databaseUrl) for (const mode of MODES) bytes.postgres[mode] = await postgresBytesPerOp(mode, bytesOps, databaseUrl);
  const body = [['SQLite file bytes/op', ...MODES.map((m) => (m in bytes.sqlite ? fmt(bytes.sqlite[m]) : '-'))]];
  if (databaseUrl) {
    body.push(['PostgreSQL WAL bytes/op', ...MODES.map((m) => fmt(bytes.postgres[m].walPerOp))]);
    body.push(['PostgreSQL table+index bytes/op', ...MODES.map((m) => fmt(bytes.postgres[m].tablePerOp))]);
  }
  printTable(['', ...MODES], body);
}

// How few WAL bytes the ledger's content could cost on PostgreSQL in any layout (src/wal-floor.mjs).
let walFloor = null;
if (only.has('wal-floor')) {
  if (!databaseUrl) console.log('\nWAL floor: n/a (no DATABASE_URL)');
  else printWalFloor((walFloor = await runWalFloor(databaseUrl, bytesOps)));
}

// Cost per op against the rows already stored.
let scale = null;
if (only.has('scale')) {
  console.log(`\nScale: ops/s with ${scaleRows.map(fmt).join(', ')} operations already stored (pre-filled in one transaction), median of ${args['scale-reps'] ?? 1}`);
  console.log(`rawid = raw's two statements under content-derived ids of the ledger's shape (raw's own ids are sequential): what a unique index on those ids costs as the store grows`);
  scale = [];
  // Each round pre-fills a fresh store per mode (1M rows take a while): not Powertools, --scale-reps rounds (default 1).
  // rawid (raw's two statements under content-derived ids) is the floor the bound below is read from.
  // layout only when asked for (--modes): PostgreSQL only, and each mode's pre-fill takes minutes.
  const scaleModes = MODES.filter((m) => m !== 'powertools' && (m !== 'layout' || args.modes)).flatMap((m) => (m === 'raw' && !args.modes ? ['raw', 'rawid'] : [m]));
  const scaleReps = Number(args['scale-reps'] ?? 1);
  // Each row is printed as it is measured (a 1M pre-fill takes minutes), the table again at the end.
  const step = async (store, driver, n) => {
    const modes = scaleModes.filter((m) => store === 'postgres' || !POSTGRES_ONLY.has(m));
    const r = await scenario(store, 1, driver, modes, n, scaleReps);
    scale.push(r);
    console.log(`  ${r.store} with ${fmt(n)} stored: ${modes.map((m) => `${m} ${fmt(r.opsPerSec[m])}`).join(', ')} ops/s (load ${load()})`);
  };
  const scaleStores = (args['scale-stores'] ?? 'sqlite,postgres').split(',');
  if (scaleStores.includes('sqlite')) for (const n of scaleRows) await step('sqlite', sqliteDriver, n);
  if (databaseUrl && scaleStores.includes('postgres')) for (const n of scaleRows) await step('postgres', null, n);
  printTable(['store', 'workers', 'stored', ...THROUGHPUT_HEAD], scale.map(throughputRow));
  // The work per op, which ops/s mixes with the machine's load: CPU µs (user + system) and read/write system calls.
  const per = (v, digits) => (v === null || v === undefined ? 'n/a' : v.toFixed(digits));
  console.log('\nWork per op (this process: CPU µs user + system; read / write system calls from /proc/self/io)');
  printTable(['store', 'stored', ...scaleModes.flatMap((m) => [`${m} CPU µs`, `${m} reads`, `${m} writes`])],
    scale.map((r) => [r.store, fmt(r.rows), ...scaleModes.flatMap((m) => [per(r.perOp[m]?.cpuUs, 0), per(r.perOp[m]?.reads, 2), per(r.perOp[m]?.writes, 2)])]));
  for (const store of new Set(scale.map((r) => r.store))) {
    const mine = scale.filter((r) => r.store === store);
    const first = mine[0], last = mine.at(-1);
    console.log(`${store}: runner cost per op at ${fmt(last.rows)} rows ÷ at ${fmt(first.rows)} rows = ${x(first.opsPerSec.runner / last.opsPerSec.runner)} (raw ${x(first.opsPerSec.raw / last.opsPerSec.raw)}, hand ${x(first.opsPerSec.hand / last.opsPerSec.hand)}); CPU per op ${x(last.perOp.runner.cpuUs / first.perOp.runner.cpuUs)}`);
    // What grows, in µs: the hand-written side stores the same content under the same content-derived ids
    // in two statements, so its growth is what those ids cost without the runner's code (raw's ids are sequential).
    const total = (p) => p.cpuUs + (p.serverUs ?? 0);
    const grown = scaleModes.filter((m) => first.perOp[m] && last.perOp[m]).map((m) => `${m} ${signed(total(last.perOp[m]) - total(first.perOp[m]))}`).join(', ');
    console.log(`${store}: CPU µs per op (this process${first.perOp.runner.serverUs !== null ? ' + server' : ''}) at ${fmt(last.rows)} rows − at ${fmt(first.rows)}: ${grown}`);
    if (first.opsPerSec.rawid && last.opsPerSec.rawid) console.log(`${store}: ${floorBound(first, last)}`);
  }
  console.log(`load average ${load()} at the end of the scale runs`);
}

/**
 * How flat the runner can be on this store, read from the floor: rawid stores next to nothing per op but
 * inserts each op's content-derived id into a unique index, as the ledger must (one id, one operation).
 * Its growth in time per op (one worker: 1 / ops/s) is what those ids cost as the store grows at this
 * store's settings; a runner whose own code grew by nothing would still grow by about that much.
 */
function floorBound(first, last) {
  const us = (opsPerSec) => 1e6 / opsPerSec;
  const floorGrowth = us(last.opsPerSec.rawid) - us(first.opsPerSec.rawid);
  const runnerGrowth = us(last.opsPerSec.runner) - us(first.opsPerSec.runner);
  return `the floor (rawid: raw's statements under content-derived ids) grows ${signed(floorGrowth)} µs per op from ${fmt(first.rows)} to ${fmt(last.rows)} rows (${x(first.opsPerSec.rawid / last.opsPerSec.rawid)}), the runner ${signed(runnerGrowth)}; `
    + `added to the runner's ${fmt(us(first.opsPerSec.runner))} µs op at ${fmt(first.rows)} rows, the floor's growth alone makes ${x((us(first.opsPerSec.runner) + floorGrowth) / us(first.opsPerSec.runner))} (a runner whose own code grew by nothing)`;
}

// Instructions per op under callgrind (on demand: `--part=instructions`).
let instructions = null;
if (only.has('instructions')) {
  const { runInstructions, printInstructions } = await import('./instructions.mjs');
  console.log('\nInstructions per op (valgrind callgrind, node --single-threaded; differences of run lengths, so start-up cancels)…');
  instructions = await runInstructions({
    quick,
    modes: MODES,
    driver: sqliteDriver,
    breakdown: args.where === 'true',
    ...(args.windows ? { windows: args.windows.split(',').map(Number) } : {}),
    ...(args.lines ? { lines: Number(args.lines) } : {}),
    ...(args['instr-stores'] ? { stores: args['instr-stores'].split(',') } : {}),
  });
  printInstructions(instructions);
}

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
    console.log('one driver: the ledger runs on node:sqlite only');
  }
}

async function scenarioOnce(driver, mode) {
  const dir = mkdtempSync(join(tmpdir(), 'retrysafe-bench-'));
  try {
    const sqlitePath = join(dir, 'bench.db');
    prepareSqlite(sqlitePath, driver);
    return (await measure((w) => ({ store: 'sqlite', mode, sqlitePath, worker: w, driver }), 1)).opsPerSec;
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
console.log(`\nJSON ${JSON.stringify({ rows, bytes, walFloor, scale, instructions, drivers, dbos, rss, footprint })}`);
