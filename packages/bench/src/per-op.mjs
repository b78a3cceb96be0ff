// What one clean operation costs on PostgreSQL: N operations through runner.run on the PostgreSQL ledger
// (or one of the bench's other workloads), then per op: wall time, the Node process's CPU, the server's
// CPU (the cluster whose PGDATA is given, read from /proc), the statements sent (each a round trip, in every
// mode), the WAL bytes (after a CHECKPOINT, so first page touches pay their full-page images) and flushes,
// and the bytes of table and indexes.
//   DATABASE_URL=... node packages/bench/src/per-op.mjs [N=2000] [--mode=runner|raw|hand|powertools]
//        [--async-commit] [--caller-clock] [--waldump=<PGDATA>/pg_wal] [--pgdata=<PGDATA>] [--keep] [--calls] [--alloc]
// RETRYSAFE_PG=<another build's dist/index.js>: measure that build instead (before/after, interleaved).
// --waldump: pg_waldump's statistics per record type of the same window. --async-commit: the ledger's
// connections commit without waiting for the WAL flush (CPU-bound loop). --caller-clock: leaseClock 'caller'.
// --calls and --alloc (see the README) slow the window they watch: read their counts, not its times.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRunner } from '@retrysafe/core';
import pg from 'pg';
import { createNoopAdapter } from './noop-adapter.mjs';
import { preparePostgres, setupWorkload } from './workloads.mjs';

const { createPostgresLedger, migrate } = await import(
  process.env.RETRYSAFE_PG ? pathToFileURL(resolve(process.env.RETRYSAFE_PG)).href : '@retrysafe/ledger-postgres'
);
const args = process.argv.slice(2);
const opt = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const n = Number(args.find((a) => /^\d+$/.test(a)) ?? 2000);
const mode = opt('mode') ?? 'runner';
const waldump = opt('waldump');
const pgdata = opt('pgdata') ?? (waldump ? waldump.replace(/\/pg_wal\/?$/, '') : undefined);
const asyncCommit = args.includes('--async-commit');
const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL is not set');
const schema = `rs_perop_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: url });
await admin.connect();

// Every statement sent on any pg.Client (the ledger's own connections, a pool's, Powertools' client) is one round trip.
const counts = new Map();
let counting = false;
const send = pg.Client.prototype.query;
pg.Client.prototype.query = function (config, ...rest) {
  if (counting) {
    const name = typeof config === 'string' ? config : (config.name ?? config.text);
    // The ledger's `rs:<schema>:<name>` or `rs:<name>#<schema hash>`, a workload's name, else the first two words.
    const key = name.startsWith(`rs:${schema}:`)
      ? name.slice(schema.length + 4)
      : name.startsWith('rs:')
        ? name.slice(3).split('#')[0]
        : config.name
          ? name.replace(`"${schema}".`, '')
          : name.trim().split(/\s+/).slice(0, 2).join(' ');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return send.call(this, config, ...rest);
};
let op;
let close;
if (mode === 'runner') {
  await migrate(admin, schema);
  // The ledger's own connections, as the bench's runner has them (workloads.mjs), not a pg.Pool's.
  const settings = asyncCommit ? `${url.includes('?') ? '&' : '?'}options=-c%20synchronous_commit%3Doff` : '';
  const ledger = createPostgresLedger({
    connectionString: url + settings,
    poolSize: 2,
    schema,
    migrate: false,
    ...(args.includes('--caller-clock') ? { leaseClock: 'caller' } : {}),
  });
  const adapter = createNoopAdapter({ remember: false });
  const runner = createRunner({ ledger, owner: 'perop:1', policy: { leaseMs: 30_000 } });
  const tag = randomBytes(3).toString('hex');
  op = async (i) => {
    const res = await runner.run(adapter, 'orders.create', { params: { orderRef: `${tag}-${i}`, amount: 1 } });
    if (res.status !== 'done') throw new Error(`runner returned ${res.status}`);
  };
  close = () => ledger.close();
} else {
  await preparePostgres(url, schema, mode);
  const w = await setupWorkload({ store: 'postgres', mode, databaseUrl: url, schema, worker: 0 });
  op = (i) => w.op(i);
  close = () => w.close();
}
const run = async (from, count) => {
  for (let i = from; i < from + count; i++) await op(i);
};

/** The server's WAL flushes so far (pg_stat_wal, PostgreSQL 14 and later): a commit that waits for its flush is one,
 * unless it joins another's; a commit with synchronous_commit off waits for none. */
async function walSyncs() {
  const { rows } = await admin.query('SELECT wal_sync FROM pg_stat_wal').catch(() => ({ rows: [{ wal_sync: NaN }] }));
  return Number(rows[0].wal_sync);
}

/** CPU ticks (1/100 s) of every live process of the cluster: the postmaster's children. */
function serverTicks() {
  if (!pgdata) return NaN;
  const postmaster = readFileSync(`${pgdata}/postmaster.pid`, 'utf8').split('\n')[0];
  let sum = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      if (f[1] === postmaster || pid === postmaster) sum += Number(f[11]) + Number(f[12]);
    } catch {
      // gone meanwhile
    }
  }
  return sum;
}

await run(0, 200);
const watch = await watchWindow();
await admin.query('CHECKPOINT');
const lsn0 = (await admin.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l;
const syncs0 = await walSyncs();
counting = true;
const s0 = serverTicks();
const c0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
await run(200, n);
const t1 = process.hrtime.bigint();
const c1 = process.cpuUsage(c0);
const s1 = serverTicks();
counting = false;
await watch();
const lsn1 = (await admin.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l;
const syncs = (await walSyncs()) - syncs0;
const wal = Number((await admin.query('SELECT pg_wal_lsn_diff($1, $2) AS d', [lsn1, lsn0])).rows[0].d);
const size = Number(
  (
    await admin.query(
      `SELECT coalesce(sum(pg_total_relation_size(format('%I.%I', schemaname, tablename))), 0)::bigint AS n FROM pg_tables WHERE schemaname = $1`,
      [schema],
    )
  ).rows[0].n,
);
const perOp = [...counts].map(([k, v]) => `${k}=${(v / n).toFixed(2)}`).join(' ');
const trips = [...counts.values()].reduce((a, b) => a + b, 0) / n;
console.log(
  `${mode}: ${n} ops, ${(Number(t1 - t0) / 1e6 / n).toFixed(3)} ms/op, Node CPU ${((c1.user + c1.system) / n).toFixed(0)} µs/op (user ${(c1.user / n).toFixed(0)}), ` +
    `server CPU ${(((s1 - s0) * 10_000) / n).toFixed(0)} µs/op, WAL ${(wal / n).toFixed(0)} bytes/op, WAL flushes/op ${(syncs / n).toFixed(2)}, ` +
    `tables+indexes ${(size / (n + 200)).toFixed(0)} bytes/op, round trips/op ${trips.toFixed(2)} (${perOp})`,
);
await close();
if (waldump) {
  await admin.query('SELECT pg_switch_wal()');
  console.log(
    execFileSync(waldumpBin(), ['-p', waldump, '-s', lsn0, '-e', lsn1, '--stats=record'], { encoding: 'utf8' }),
  );
}
if (!args.includes('--keep')) await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
else console.log(`kept schema ${schema}`);
await admin.end();

/** Starts --calls or --alloc; the function returned prints what it saw, per op. */
async function watchWindow() {
  const calls = args.includes('--calls');
  if (!calls && !args.includes('--alloc')) return async () => {};
  const s = new Session();
  s.connect();
  const ours = (url) => url.includes('/packages/') && !url.includes('/packages/bench/');
  const where = (url, line) => `${url.replace(/.*\/(packages|node_modules)\//, '')}:${line + 1}`;
  if (calls) {
    await s.post('Profiler.enable');
    await s.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    await s.post('Profiler.takePreciseCoverage'); // counts from here
  } else {
    await s.post('HeapProfiler.enable');
    const collected = { includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true };
    await s.post('HeapProfiler.startSampling', { samplingInterval: 256, ...collected });
  }
  return async () => {
    const rows = new Map();
    if (calls) {
      for (const script of (await s.post('Profiler.takePreciseCoverage')).result)
        for (const f of ours(script.url) ? script.functions : [])
          rows.set(
            `${f.functionName || '(anonymous)'} ${script.url.replace(/.*\/packages\//, '')}@${f.ranges[0].startOffset}`,
            f.ranges[0].count,
          );
    } else {
      // A builtin (sort, a Set) is named with the function that called it.
      const visit = (node, caller) => {
        const { functionName, url, lineNumber } = node.callFrame;
        const at =
          url === '' && caller
            ? `${functionName || '(native)'} in ${caller}`
            : `${functionName || '(anonymous)'} ${url ? where(url, lineNumber) : ''}`;
        rows.set(at, (rows.get(at) ?? 0) + node.selfSize);
        for (const child of node.children)
          visit(child, url === '' ? caller : `${functionName || '(anonymous)'} ${where(url, lineNumber)}`);
      };
      visit((await s.post('HeapProfiler.stopSampling')).profile.head, null);
      console.log(`allocated ${([...rows.values()].reduce((a, b) => a + b, 0) / n).toFixed(0)} bytes/op, by function:`);
    }
    s.disconnect();
    const least = calls ? 1 : 100; // calls, or bytes, per op
    const top = [...rows].filter(([, v]) => v / n >= least).sort((a, b) => b[1] - a[1]);
    for (const [at, v] of top.slice(0, calls ? undefined : 60))
      console.log(`${(v / n).toFixed(calls ? 2 : 0).padStart(8)} ${at}`);
  };
}

/** pg_waldump from PATH, else from the newest /usr/lib/postgresql/<v>/bin (Debian keeps it there). */
function waldumpBin() {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return 'pg_waldump';
  const v = readdirSync(root)
    .sort((a, b) => Number(b) - Number(a))
    .find((d) => existsSync(`${root}/${d}/bin/pg_waldump`));
  return v ? `${root}/${v}/bin/pg_waldump` : 'pg_waldump';
}
