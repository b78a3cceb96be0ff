// The PostgreSQL server's instructions for a clean operation's two statements (issue 23, seventh round):
// the claim's INSERT and the completion's remembered-row UPDATE, replayed by a single-user
// `postgres --single` under callgrind as PREPARE/EXECUTE (each statement its own transaction; fsync off),
// at two lengths; the difference divided by the difference of the lengths cancels start-up and DDL.
// Deterministic (no timer, no load), so schema and statement variants compare on a shared machine.
//   node packages/ledger-postgres/scripts/server-replay.mjs [--migration=6] [--statements=7] [--ops=1000,3000] [--checks=all|none]
// --migration: the schema as migrations 1..N leave it (5: the three table CHECKs; 6: state and fence domains).
// --statements: 6 = the statements as sent before round seven (13 and 16 parameters, CASE flags), 7 = now.
// --checks=none: every CHECK and domain check dropped (a reference, not a schema to ship).
// Needs valgrind and PostgreSQL's server binaries (pg_config --bindir); run as root it runs them as `postgres`.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS } from '../dist/index.js';

const args = process.argv.slice(2);
const opt = (name, dflt) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const migration = Number(opt('migration', '6'));
const statements = Number(opt('statements', '7'));
const lengths = opt('ops', '1000,3000').split(',').map(Number);
const checks = opt('checks', 'all');
const bindir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
const asPostgres = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
/** Runs `cmd` (as postgres when root); fails on a non-zero exit or an ERROR the server printed. */
function run(cmd, argv, input) {
  const r = spawnSync(asPostgres[0] ?? cmd, [...asPostgres.slice(1), ...(asPostgres.length ? [cmd] : []), ...argv], { input, stdio: ['pipe', 'ignore', 'pipe'], encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.status !== 0 || /\bERROR:/.test(r.stderr)) throw new Error(`${cmd} failed: ${r.stderr.split('\n').filter((l) => /ERROR|FATAL/.test(l)).slice(0, 3).join(' | ') || r.status}`);
}

const S = 's';
const T = `${S}.retrysafe_operations`;
function script(n) {
  const out = [];
  // postgres --single -j: a statement ends with a semicolon and an empty line.
  const q = (x) => out.push(`${x.trim().replace(/;\s*$/, '')};`);
  q(`CREATE SCHEMA ${S}`);
  for (const m of MIGRATIONS.filter((x) => x.version <= migration)) {
    for (const st of m.sql.replaceAll('{{schema}}', S).split(/;\s*\n/)) if (st.replace(/--.*$/gm, '').trim()) q(st);
  }
  if (checks === 'none') {
    q(`ALTER TABLE ${T} DROP CONSTRAINT retrysafe_operations_check`);
    if (migration >= 6) q(`ALTER DOMAIN ${S}.retrysafe_state DROP CONSTRAINT retrysafe_state_check`), q(`ALTER DOMAIN ${S}.retrysafe_fence DROP CONSTRAINT retrysafe_fence_check`);
    else q(`ALTER TABLE ${T} DROP CONSTRAINT retrysafe_operations_state_check, DROP CONSTRAINT retrysafe_operations_fence_check`);
  }
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
    q(`PREPARE claim AS INSERT INTO ${T} (${cols}) VALUES ($1, $2, $3, $4, $5, $6::json, $7, 'dispatched', 1, $8, ${leaseEnd}, $10, $10, 1, $10)
       ON CONFLICT (business_operation_id) DO NOTHING RETURNING lease_expires_at, xmin`);
    q(`PREPARE complete AS UPDATE ${T} SET state = $1, updated_at = $2, last_outcome = $3, result = $4::json, provider_ref = $5,
         lease_owner = NULL, lease_expires_at = NULL, receipts = coalesce(left(receipts, -1) || ',', '[') || $9::text || ']', receipt_head = $10, receipt_count = $8
       WHERE business_operation_id = $6 AND fence = $7 AND ${guard} AND receipt_count + 1 = $8::integer RETURNING xmin, set_config('synchronous_commit', 'off', true) AS deferred_commit`);
  }
  const lit = (v) => (v === null ? 'NULL' : typeof v === 'boolean' || typeof v === 'number' ? String(v) : `'${String(v).replaceAll("'", "''")}'`);
  const h = (x) => createHash('sha256').update(String(x)).digest('hex');
  const t0 = 1_800_000_000_000;
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
  return out.join('\n\n');
}

const dir = mkdtempSync(join(tmpdir(), 'rs-replay-'));
chmodSync(dir, 0o777);
try {
  const data = join(dir, 'data');
  run(join(bindir, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale']);
  const totals = lengths.map((n) => {
    const out = join(dir, `cg.${n}`);
    const log = join(dir, `log.${n}`);
    writeFileSync(join(dir, `in.${n}.sql`), script(n));
    // Each length on a fresh copy of the empty cluster.
    run('cp', ['-a', data, `${data}.${n}`]);
    run('valgrind', ['--tool=callgrind', `--callgrind-out-file=${out}`, `--log-file=${log}`, join(bindir, 'postgres'), '--single', '-j', '-D', `${data}.${n}`, '-c', 'fsync=off', '-c', 'synchronous_commit=off', 'postgres'], script(n));
    const text = execFileSync('cat', [log], { encoding: 'utf8' });
    const total = Number(/Collected : (\d+)/.exec(text)?.[1]);
    if (!total) throw new Error(`no callgrind total in ${log}`);
    return total;
  });
  const perOp = (totals.at(-1) - totals[0]) / (lengths.at(-1) - lengths[0]);
  console.log(JSON.stringify({ migration, statements, checks, lengths, totals, instructionsPerOp: Math.round(perOp) }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
