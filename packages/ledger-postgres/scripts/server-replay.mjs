// The PostgreSQL server's instructions for a clean operation's two statements (issue 23, seventh and ninth
// rounds): the claim's INSERT and the completion's remembered-row UPDATE, replayed by a single-user
// `postgres --single` under callgrind as PREPARE/EXECUTE (each statement its own transaction; fsync off),
// at two lengths; the difference divided by the difference of the lengths cancels start-up and DDL.
// Deterministic (no timer, no load), so schema and statement variants compare on a shared machine.
//   node packages/ledger-postgres/scripts/server-replay.mjs [--migration=6] [--statements=7] [--ops=1000,3000]
//        [--checks=all|none] [--schema=retrysafe|powertools] [--try=<variant>,…] [--functions=N] [--wal]
//        [--via=single|server [--port=54339] [--before]]
// --migration: the schema as migrations 1..N leave it (5: the three table CHECKs; 6: state and fence domains;
//   default: the newest this build ships).
// --statements: 6 = the statements as sent before round seven (13 and 16 parameters, CASE flags), 7 = now.
// --checks=none: every CHECK and domain check dropped (a reference, not a schema to ship).
// --schema=powertools: the Powertools-protocol baseline's table and two statements (packages/bench's
//   PostgresPersistenceLayer: the put of the INPROGRESS record, then the update with the response), values of
//   the bench's sizes, so the two protocols compare in one tool.
// --try: experiments on the ledger's schema after the migrations (not shipped; see VARIANTS below).
// --functions=N: where the per-op instructions go: the N functions with the largest per-op difference, by
//   inclusive and by own (self) instructions (callgrind_annotate of both lengths' profiles).
// --wal: also the WAL bytes the longer run wrote per op beyond the shorter (no full-page images: nothing
//   checkpoints in between).
// --via=server: instead of the single-user replay, a PostgreSQL server under callgrind and the bench's real
//   workload against it (packages/bench/src/workloads.mjs: `runner` = runner.run on this ledger, statements
//   sent as the ledger sends them, extended protocol, parameters bound as text; `powertools` = makeIdempotent
//   on its PostgresPersistenceLayer); counted: the client backends' instructions (the Node side runs outside
//   valgrind). What the server really does per op, protocol included; the single-user replay instead lexes
//   every parameter as a literal of the EXECUTE text, which costs per byte (~170 instructions per byte here).
//   `--try` variants with SQL only (or with --before, below); the schema is the package's newest migration (--migration is the replay's).
//   `--before`: the runner on the core and ledger builds in BENCH_BASELINE=<dir with core-dist/ and pg-dist/>
//   (the bench's `before` mode), to measure a statement change through the protocol.
// Needs valgrind and PostgreSQL's server binaries (pg_config --bindir); run as root it runs them as `postgres`.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS } from '../dist/index.js';
import { eventTotals, selfByFunction } from '../../bench/src/instructions.mjs';
import { LEDGER_STATEMENTS, withoutRowVersion } from '../../bench/src/ledger-statements.mjs';
import { POSTGRES_STATEMENTS, TABLE_SQL } from '../../bench/src/powertools-persistence.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const newest = MIGRATIONS.reduce((m, x) => Math.max(m, x.version), 0);
const migration = Number(opt('migration', String(newest)));
const statements = Number(opt('statements', '7'));
const lengths = opt('ops', '1000,3000').split(',').map(Number);
const checks = opt('checks', 'all');
const schema = opt('schema', 'retrysafe');
const tries = opt('try', '').split(',').filter(Boolean);
const functions = Number(opt('functions', '0'));
const wal = args.includes('--wal');
const via = opt('via', 'single');
const bindir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
const asPostgres = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
/** Runs `cmd` (as postgres when root); fails on a non-zero exit or an ERROR the server printed. Returns its stdout. */
function run(cmd, argv, input) {
  const r = spawnSync(asPostgres[0] ?? cmd, [...asPostgres.slice(1), ...(asPostgres.length ? [cmd] : []), ...argv], { input, stdio: ['pipe', 'pipe', 'pipe'], encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.status !== 0 || /\bERROR:/.test(r.stderr)) throw new Error(`${cmd} failed: ${r.stderr.split('\n').filter((l) => /ERROR|FATAL/.test(l)).slice(0, 3).join(' | ') || r.status}`);
  return r.stdout;
}

const S = 's';
const T = `${S}.retrysafe_operations`;
/** A statement's SQL as `postgres --single -j` reads it: ending with a semicolon (and an empty line, added by the join). */
const stmt = (x) => `${x.trim().replace(/;\s*$/, '')};`;
/** The statements of a migration's (or experiment's) SQL, comments and empty ones left out. */
const statementsOf = (sql, schemaName = S) => sql.replaceAll('{{schema}}', schemaName).split(/;\s*\n/).filter((st) => st.replace(/--.*$/gm, '').trim()).map(stmt);
const lit = (v) => (v === null ? 'NULL' : typeof v === 'boolean' || typeof v === 'number' ? String(v) : `'${String(v).replaceAll("'", "''")}'`);
const h = (x) => createHash('sha256').update(String(x)).digest('hex');
const t0 = 1_800_000_000_000;

/**
 * Experiments on the ledger's schema (`--try`), each SQL (`{{schema}}` standing for the schema, as in a
 * migration) run after the migrations and, where the statements must change with it, a rewrite of their
 * text. None is a schema to ship as it is.
 */
const VARIANTS = {
  // The four json columns as text: the server no longer validates their input (the ledger parses what it reads).
  'text-json': {
    sql: `ALTER TABLE {{schema}}.retrysafe_operations ALTER COLUMN params TYPE text, ALTER COLUMN result TYPE text, ALTER COLUMN handoff TYPE text, ALTER COLUMN resolution TYPE text`,
    statement: (x) => x.replaceAll('::json', '::text'),
  },
  // No lease CHECK (a reference: what the last table CHECK costs).
  'no-lease-check': { sql: `ALTER TABLE {{schema}}.retrysafe_operations DROP CONSTRAINT retrysafe_operations_check` },
  // The completion returns nothing (a reference: what RETURNING xmin, set_config costs).
  'no-returning': { statement: (x) => x.replace(/ RETURNING xmin, set_config\([^)]*\) AS deferred_commit$/, '') },
  // The claim returns nothing (a reference).
  'no-claim-returning': { statement: (x) => x.replace(/ RETURNING lease_expires_at, xmin$/, '') },
  // Without the created_at index / the partial index of open rows (references: what each index costs).
  'no-created-idx': { sql: `DROP INDEX {{schema}}.retrysafe_operations_created_idx` },
  'no-open-idx': { sql: `DROP INDEX {{schema}}.retrysafe_operations_open_idx` },
  // The columns a claim fixes first, those a completion changes last (the table made again, empty: a
  // measurement of the layout, not a migration), so a same-page update logs only from `state` on.
  reorder: {
    sql: `DROP TABLE {{schema}}.retrysafe_operations;
CREATE TABLE {{schema}}.retrysafe_operations (
  business_operation_id text PRIMARY KEY, provider text NOT NULL, operation text NOT NULL, intent_fingerprint text NOT NULL,
  params_fingerprint text NOT NULL, params json, provider_key text, fence {{schema}}.retrysafe_fence NOT NULL, created_at bigint NOT NULL,
  first_dispatched_at bigint, attempt_count integer NOT NULL DEFAULT 0, state {{schema}}.retrysafe_state NOT NULL, lease_owner text,
  lease_expires_at bigint, updated_at bigint NOT NULL, last_outcome text, result json, provider_ref text, status_ref text,
  handoff json, resolution json, receipt_head text, receipt_count integer NOT NULL DEFAULT 0, receipts text,
  CONSTRAINT retrysafe_operations_check CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL)));
CREATE INDEX retrysafe_operations_created_idx ON {{schema}}.retrysafe_operations (created_at);
CREATE INDEX retrysafe_operations_open_idx ON {{schema}}.retrysafe_operations (state, created_at) WHERE state NOT IN ('succeeded', 'rejected', 'abandoned')`,
  },
  // The lease rule written as one function call (a shorter stored expression to read back per statement).
  'lease-num-nulls': {
    sql: `ALTER TABLE {{schema}}.retrysafe_operations DROP CONSTRAINT retrysafe_operations_check, ADD CONSTRAINT retrysafe_operations_check CHECK (num_nulls(lease_owner, lease_expires_at) <> 1)`,
  },
  // The claim as a plain INSERT (a duplicate would fail with 23505 instead of returning no row): no speculative insertion.
  'plain-insert': { statement: (x) => x.replace(/\s*ON CONFLICT \(business_operation_id\) DO NOTHING/, '') },
  // The receipts compressed in the row (lz4; pglz) once a row passes 1 kB: a completed clean row is ~1.3 kB.
  'receipts-lz4': { sql: `ALTER TABLE {{schema}}.retrysafe_operations ALTER COLUMN receipts SET COMPRESSION lz4, SET (toast_tuple_target = 1024)` },
  'receipts-pglz': { sql: `ALTER TABLE {{schema}}.retrysafe_operations ALTER COLUMN receipts SET COMPRESSION pglz, SET (toast_tuple_target = 1024)` },
  // The partial index of open rows keyed by created_at alone (its predicate unchanged): a smaller entry per claim.
  'open-idx-created': {
    sql: `DROP INDEX {{schema}}.retrysafe_operations_open_idx;
CREATE INDEX retrysafe_operations_open_idx ON {{schema}}.retrysafe_operations (created_at) WHERE state NOT IN ('succeeded', 'rejected', 'abandoned')`,
  },
  // The lease rule in a domain over a composite column (owner, expires_at) instead of a table CHECK on two
  // columns: PostgreSQL keeps a domain's check compiled in its type cache, where it reads a table CHECK back
  // from its stored text for every statement. Same rule (an owner exactly when an expiry), any writer.
  'lease-domain': {
    sql: `CREATE TYPE {{schema}}.retrysafe_lease_pair AS (owner text, expires_at bigint);
CREATE DOMAIN {{schema}}.retrysafe_lease AS {{schema}}.retrysafe_lease_pair CHECK (((VALUE).owner IS NULL) = ((VALUE).expires_at IS NULL));
ALTER TABLE {{schema}}.retrysafe_operations DROP CONSTRAINT retrysafe_operations_check, DROP COLUMN lease_owner, DROP COLUMN lease_expires_at,
  ADD COLUMN lease {{schema}}.retrysafe_lease`,
    statement: (x) => x
      .replace('state, fence, lease_owner, lease_expires_at, created_at', 'state, fence, lease, created_at')
      .replace('$8, (extract(epoch from now()) * 1000)::bigint + $9::bigint', `ROW($8, (extract(epoch from now()) * 1000)::bigint + $9::bigint)::${S}.retrysafe_lease`)
      .replace('RETURNING lease_expires_at, xmin', 'RETURNING (lease).expires_at AS lease_expires_at, xmin')
      .replace('lease_owner = NULL, lease_expires_at = NULL', 'lease = NULL'),
  },
  // The primary key's text in the "C" collation (the replay's cluster is C already: shows only the DDL works).
  'pk-collate-c': { sql: `ALTER TABLE {{schema}}.retrysafe_operations ALTER COLUMN business_operation_id TYPE text COLLATE "C"` },
};
for (const t of tries) if (!VARIANTS[t]) throw new Error(`unknown --try=${t}: one of ${Object.keys(VARIANTS).join(', ')}`);
const rewrite = (x) => tries.reduce((text, t) => VARIANTS[t].statement?.(text) ?? text, x);

/** The ledger's schema (migrations 1..N, --checks, --try) and `n` clean operations. */
function retrysafeScript(n) {
  const out = [stmt(`CREATE SCHEMA ${S}`)];
  for (const m of MIGRATIONS.filter((x) => x.version <= migration)) out.push(...statementsOf(m.sql));
  if (checks === 'none') {
    out.push(stmt(`ALTER TABLE ${T} DROP CONSTRAINT retrysafe_operations_check`));
    if (migration >= 6) out.push(stmt(`ALTER DOMAIN ${S}.retrysafe_state DROP CONSTRAINT retrysafe_state_check`), stmt(`ALTER DOMAIN ${S}.retrysafe_fence DROP CONSTRAINT retrysafe_fence_check`));
    else out.push(stmt(`ALTER TABLE ${T} DROP CONSTRAINT retrysafe_operations_state_check, DROP CONSTRAINT retrysafe_operations_fence_check`));
  }
  for (const t of tries) if (VARIANTS[t].sql) out.push(...statementsOf(VARIANTS[t].sql));
  const q = (x) => out.push(stmt(rewrite(x)));
  const cols = `business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, params, provider_key,
           state, fence, lease_owner, lease_expires_at, created_at, updated_at, attempt_count, first_dispatched_at`;
  const leaseEnd = `(extract(epoch from now()) * 1000)::bigint + $9::bigint`;
  const guard = `state NOT IN ('succeeded', 'rejected', 'handed-off', 'abandoned')`;
  // The remembered-row guard (AND xmin = $n::xid) is left out: a script cannot pass the xmin the INSERT returned.
  if (statements === 6) {
    q(`PREPARE claim AS INSERT INTO ${T} (${cols}) VALUES ($1, $2, $3, $4, $5, $6::json, $7, $11, 1, $8, ${leaseEnd}, $10, $10, $12, $13)
       ON CONFLICT (business_operation_id) DO NOTHING RETURNING lease_expires_at, xmin`);
    q(`PREPARE complete AS UPDATE ${T} SET state = $1, updated_at = $2,
         last_outcome = CASE WHEN $3::boolean THEN $4 ELSE last_outcome END, result = CASE WHEN $5::boolean THEN $6::json ELSE result END,
         provider_ref = CASE WHEN $7::boolean THEN $8 ELSE provider_ref END, status_ref = CASE WHEN $9::boolean THEN $10 ELSE status_ref END,
         lease_owner = NULL, lease_expires_at = NULL, receipts = coalesce(left(receipts, -1) || ',', '[') || $14::text || ']', receipt_head = $15, receipt_count = $13
       WHERE business_operation_id = $11 AND fence = $12 AND ${guard} AND receipt_count + 1 = $13::integer RETURNING xmin, set_config('synchronous_commit', 'off', true) AS deferred_commit`);
  } else {
    // The ledger's statements as it sends them (kept equal to them by packages/bench/test/ledger-statements.test.ts).
    q(`PREPARE claim AS ${LEDGER_STATEMENTS.claim(T)}`);
    q(`PREPARE complete AS ${withoutRowVersion(LEDGER_STATEMENTS.complete(T))}`);
  }
  for (let i = 0; i < n; i++) {
    const id = `noop.orders.create:${h(i).slice(0, 32)}`;
    const fp = `sha256:${h(`f${i}`)}`;
    const now = t0 + i;
    const claim = [id, 'noop', 'noop.orders.create', fp, fp, JSON.stringify({ orderRef: `w0-${i}`, amount: 1 }), id, 'bench:1:w0', 30000, now];
    q(`EXECUTE claim(${(statements === 6 ? [...claim, 'dispatched', 1, now] : claim).map(lit).join(', ')})`);
    const at = new Date(now).toISOString();
    const receipt = JSON.stringify({ businessOperationId: id, seq: 1, runId: `run_${h(`r${i}`).slice(0, 32)}`, attemptId: `att_${h(`a${i}`).slice(0, 32)}`, provider: 'noop', operation: 'noop.orders.create', kind: 'dispatch', startedAt: at, finishedAt: at, outcome: 'succeeded', decision: { action: 'complete', reason: 'the provider performed it' }, providerKey: id, providerRef: `ord_w0-${i}`, requestFingerprint: fp, prevHash: null, hash: h(`x${i}`) });
    const result = JSON.stringify({ id: `ord_w0-${i}` });
    const complete = statements === 6
      ? ['succeeded', now, true, 'succeeded', true, result, true, `ord_w0-${i}`, false, null, id, 1, 1, receipt, h(`x${i}`)]
      : ['succeeded', now, 'succeeded', result, `ord_w0-${i}`, id, 1, 1, receipt, h(`x${i}`)];
    q(`EXECUTE complete(${complete.map(lit).join(', ')})`);
  }
  return out;
}

/**
 * The Powertools-protocol baseline (packages/bench's PostgresPersistenceLayer, payload validation on): its
 * table and `n` clean calls, each the put of the INPROGRESS record and the update with the response. The
 * key and payload hash are md5 in base64 under the function's prefix, as Powertools makes them.
 */
function powertoolsScript(n) {
  const t = `${S}.powertools_idempotency`;
  const out = [stmt(`CREATE SCHEMA ${S}`), stmt(TABLE_SQL(t))];
  out.push(stmt(`PREPARE put AS ${POSTGRES_STATEMENTS.put(t)}`), stmt(`PREPARE complete AS ${POSTGRES_STATEMENTS.update(t)}`));
  const md5 = (x) => createHash('md5').update(String(x)).digest('base64');
  for (let i = 0; i < n; i++) {
    const now = t0 + i;
    const expiry = Math.round(now / 1000 + 24 * 3600);
    const key = `.noop#${md5(JSON.stringify(`w0-${i}`))}`;
    out.push(stmt(`EXECUTE put(${[key, 'INPROGRESS', expiry, now + 30000, md5(JSON.stringify([`w0-${i}`, 1])), Math.floor(now / 1000), now].map(lit).join(', ')})`));
    out.push(stmt(`EXECUTE complete(${[key, 'COMPLETED', JSON.stringify({ id: `ord_w0-${i}` }), expiry].map(lit).join(', ')})`));
  }
  return out;
}

const script = (n) => (schema === 'powertools' ? powertoolsScript(n) : retrysafeScript(n)).join('\n\n');
if (schema !== 'retrysafe' && schema !== 'powertools') throw new Error(`--schema must be retrysafe or powertools, got ${schema}`);

/** Per function (`file:name`), its instructions in a profile: inclusive or self, from callgrind_annotate. */
function byFunction(file, inclusive) {
  const counts = new Map();
  for (const [full, n] of selfByFunction(file, { inclusive })) {
    // `file:function [object]` → `file:function`, the file's directory left out.
    const name = full.replace(/(?: \[[^\]]*\])?\s*$/, '');
    if (!name.includes(':')) continue;
    const short = name.replace(/^.*\//, '');
    counts.set(short, (counts.get(short) ?? 0) + n);
  }
  return counts;
}
/** The `top` functions by per-op difference between two profiles of runs `dn` ops apart. */
function perOpTop(a, b, dn, top) {
  const names = new Set([...a.keys(), ...b.keys()]);
  return [...names].map((k) => [k, Math.round(((b.get(k) ?? 0) - (a.get(k) ?? 0)) / dn)]).sort((x, y) => y[1] - x[1]).slice(0, top);
}
/** The end of the WAL of a cleanly shut down cluster (its last checkpoint's location), as a byte position. */
function walEnd(data) {
  const text = run(join(bindir, 'pg_controldata'), ['-D', data]);
  const [hi, lo] = /Latest checkpoint location:\s+([0-9A-F]+)\/([0-9A-F]+)/.exec(text).slice(1).map((x) => BigInt(`0x${x}`));
  return Number((hi << 32n) + lo);
}

/** Single-user replay: each length on a fresh copy of the empty cluster, `postgres --single` under callgrind. */
function singleUser(dir, data) {
  return lengths.map((n) => {
    const out = join(dir, `cg.${n}`);
    const log = join(dir, `log.${n}`);
    writeFileSync(join(dir, `in.${n}.sql`), script(n));
    run('cp', ['-a', data, `${data}.${n}`]);
    run('valgrind', ['--tool=callgrind', `--callgrind-out-file=${out}`, `--log-file=${log}`, join(bindir, 'postgres'), '--single', '-j', '-D', `${data}.${n}`, '-c', 'fsync=off', '-c', 'synchronous_commit=off', 'postgres'], script(n));
    const total = Number(/Collected : (\d+)/.exec(readFileSync(log, 'utf8'))?.[1]);
    if (!total) throw new Error(`no callgrind total in ${log}`);
    // A clean shutdown ends with a checkpoint: its location is the end of the run's WAL.
    return { n, out, total, wal: wal ? walEnd(`${data}.${n}`) : undefined };
  });
}

/** The instructions a callgrind profile counted in all; NaN while callgrind has not yet written its totals. */
const profileTotal = (file) => {
  try {
    return eventTotals(readFileSync(file, 'utf8')).Ir;
  } catch {
    return NaN;
  }
};

/** A server under callgrind and the bench's workload against it, each length in a schema of its own and a backend of its own. */
async function viaServer(dir, data) {
  // A variant that rewrites statements needs a build that sends them (--before): its SQL is applied, the build's statements sent.
  const badTry = tries.find((t) => VARIANTS[t].statement);
  if (badTry && !args.includes('--before')) throw new Error(`--try=${badTry} rewrites statements: through a server only with --before and a build that sends them`);
  const { default: pg } = await import('pg');
  const { preparePostgres, setupWorkload, dropPostgres } = await import('../../bench/src/workloads.mjs');
  const port = Number(opt('port', '54339'));
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const argv = ['valgrind', '--tool=callgrind', `--callgrind-out-file=${join(dir, 'cg.%p')}`, `--log-file=${join(dir, 'vg.%p')}`, join(bindir, 'postgres'), '-D', data,
    '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'autovacuum=off', '-c', 'checkpoint_timeout=1d', '-c', 'max_wal_size=10GB', '-c', 'jit=off',
    '-c', 'listen_addresses=127.0.0.1', '-p', String(port), '-k', dir];
  const server = spawn(asPostgres[0] ?? argv[0], [...asPostgres.slice(1), ...(asPostgres.length ? argv : argv.slice(1))], { stdio: 'ignore' });
  let admin;
  try {
    // The server starts slowly under valgrind: a new client per attempt (a pg.Client connects once).
    for (let attempt = 0; !admin; attempt++) {
      const c = new pg.Client({ connectionString: url });
      try {
        await c.connect();
        admin = c;
        admin.on('error', () => undefined); // the server's shutdown at the end ends this connection too
      } catch (err) {
        if (attempt > 120) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    // --before: the bench's `before` mode, the runner on the builds in BENCH_BASELINE (e.g. a copy of dist with other statements).
    const mode = schema === 'powertools' ? 'powertools' : args.includes('--before') ? 'before' : 'runner';
    const runs = [];
    for (const n of lengths) {
      const name = `replay_${n}`;
      await preparePostgres(url, name, mode);
      for (const t of tries) for (const st of statementsOf(VARIANTS[t].sql ?? '', `"${name}"`)) await admin.query(st);
      const before = new Set((await admin.query(`SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'`)).rows.map((r) => r.pid));
      const w = await setupWorkload({ store: 'postgres', mode, databaseUrl: url, schema: name, worker: 0 });
      const lsn0 = (await admin.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l;
      for (let i = 0; i < n; i++) await w.op(i);
      const lsn1 = (await admin.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l;
      const pids = (await admin.query(`SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'`)).rows.map((r) => r.pid).filter((p) => !before.has(p));
      await w.close();
      // Each backend writes its profile when it exits.
      const files = pids.map((p) => join(dir, `cg.${p}`));
      for (let waited = 0; !files.every((f) => existsSync(f) && profileTotal(f) > 0); waited++) {
        if (waited > 600) throw new Error(`no callgrind profile from backends ${pids.join(', ')}: ${readdirSync(dir).join(' ')}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const walBytes = Number((await admin.query('SELECT pg_wal_lsn_diff($1, $2) AS d', [lsn1, lsn0])).rows[0].d);
      await dropPostgres(url, name);
      // Several backends (the ledger's pool may open a second): their profiles, summed.
      runs.push({ n, files, out: files.length === 1 ? files[0] : undefined, total: files.reduce((a, f) => a + profileTotal(f), 0), wal: walBytes });
    }
    return runs;
  } finally {
    await admin?.end().catch(() => undefined);
    // pg_ctl signals the postmaster itself (valgrind runs in its process; runuser would not pass a signal on).
    if (server.exitCode === null) {
      const exited = new Promise((r) => server.once('exit', r));
      run(join(bindir, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']);
      await exited;
    }
  }
}

const dir = mkdtempSync(join(tmpdir(), 'rs-replay-'));
chmodSync(dir, 0o777);
try {
  const data = join(dir, 'data');
  run(join(bindir, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale']);
  const runs = via === 'server' ? await viaServer(dir, data) : singleUser(dir, data);
  const first = runs[0];
  const last = runs.at(-1);
  const dn = last.n - first.n;
  const report = { schema, via, ...(schema === 'retrysafe' ? { migration, statements, checks, try: tries, ...(args.includes('--before') ? { before: process.env.BENCH_BASELINE } : {}) } : {}), lengths, totals: runs.map((r) => r.total), instructionsPerOp: Math.round((last.total - first.total) / dn) };
  if (wal || via === 'server') report.walBytesPerOp = Math.round((last.wal - first.wal) / dn);
  console.log(JSON.stringify(report));
  if (functions > 0 && first.out && last.out) {
    for (const inclusive of [true, false]) {
      console.log(`\nper op, ${inclusive ? 'inclusive' : 'self'} (top ${functions}):`);
      for (const [name, v] of perOpTop(byFunction(first.out, inclusive), byFunction(last.out, inclusive), dn, functions)) console.log(`${String(v).padStart(9)}  ${name}`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
