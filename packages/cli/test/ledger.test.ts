import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createRunner, type RunResult } from '@retrysafe/core';
import { createPostgresLedger } from '@retrysafe/ledger-postgres';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { createStripeAdapter } from '@retrysafe/stripe';
import { startStripeSandbox } from '@retrysafe/stripe/sandbox';
import { createDrillClock, startFaultProxy } from '@retrysafe/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultySandbox, startFaultySandbox } from './faulty-sandbox.js';
import { cli, cliJson, REPO, records, tempDir, writeJson } from './helpers.js';

// A SQLite ledger with four operations, made by the real runner against the loopback sandbox through
// the fault proxy: A's responses are all lost (the provider HAS the record; lookups fail too) so it is
// handed off; B and C are rejected (handed off, nothing at the provider); D succeeds.
const dir = tempDir('ledger');
const db = join(dir, 'retrysafe.db');
const config = join(dir, 'retrysafe.json');
let sandbox: FaultySandbox;
const ids: Record<'A' | 'B' | 'C' | 'D', string> = { A: '', B: '', C: '', D: '' };
let keyA = '';

beforeAll(async () => {
  sandbox = await startFaultySandbox('lose');
  const ledger = createSqliteLedger({ path: db });
  const runner = createRunner({ ledger, clock: createDrillClock() });
  const run = (ref: string): Promise<RunResult> =>
    runner.run(sandbox.adapter, 'records.create', { params: { ref, amount: 5 } });
  const a = await run('order-A');
  expect(a.status).toBe('handed-off');
  expect(sandbox.provider.count()).toBe(1); // committed at the provider, the answer never arrived
  sandbox.setFault('reject');
  const b = await run('order-B');
  const c = await run('order-C');
  expect([b.status, c.status]).toEqual(['handed-off', 'handed-off']);
  sandbox.setFault('pass');
  const d = await run('order-D');
  expect(d.status).toBe('done');
  Object.assign(ids, {
    A: a.businessOperationId,
    B: b.businessOperationId,
    C: c.businessOperationId,
    D: d.businessOperationId,
  });
  keyA = (await ledger.get(a.businessOperationId))!.providerKey!;
  await ledger.close();
  // What `--resume` builds its adapter from: the same sandbox adapter, through the proxy (now passing).
  sandbox.writeConfig(config, db);
}, 120_000);

describe('retrysafe ledger on a SQLite file', () => {
  it('ls lists every operation with its state; --state filters', async () => {
    const all = await cliJson(['ledger', 'ls', '--db', db], dir);
    expect(all.code).toBe(0);
    const byId = Object.fromEntries(all.body.map((r: any) => [r.businessOperationId, r]));
    expect(byId[ids.A]).toMatchObject({
      state: 'handed-off',
      operation: 'sandbox.records.create',
      handoffReason: 'lookup-window-exhausted',
      providerKey: keyA,
    });
    expect(byId[ids.B]).toMatchObject({ state: 'handed-off', handoffReason: 'rejected', attempts: 1 });
    expect(byId[ids.D]).toMatchObject({ state: 'succeeded', lastOutcome: 'succeeded' });
    expect(all.body).toHaveLength(4);
    const handedOff = await cliJson(['ledger', 'ls', '--db', db, '--state', 'handed-off'], dir);
    expect(handedOff.body.map((r: any) => r.businessOperationId).sort()).toEqual([ids.A, ids.B, ids.C].sort());
    const text = await cli(['ledger', 'ls', '--db', db], { cwd: dir });
    expect(text.stdout).toMatch(/business-operation id\s+state\s+attempts/);
    expect(text.stdout).toContain(ids.D);
  });

  it('export --state of a state that does not exist is a usage error that writes nothing (as ls and prune refuse it)', async () => {
    const out = join(dir, 'typo.jsonl');
    const r = await cli(['ledger', 'export', '--db', db, '--state', 'handed_off', '--out', out]);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe(
      "retrysafe: --state 'handed_off' is not a state (claimed, dispatched, unknown, in-progress, reconciling, succeeded, rejected, handed-off, abandoned, not-sent)",
    );
    expect(existsSync(out)).toBe(false);
    const good = await cli(['ledger', 'export', '--db', db, '--state', 'handed-off']);
    expect(good.code).toBe(0);
    expect(good.stdout).toContain(ids.A);
  });

  it('export --out naming the ledger file itself is refused (exit 2): the ledger is not overwritten', async () => {
    const copy = join(dir, 'export-over-itself.db');
    copyFileSync(db, copy);
    const before = await records(copy);
    expect(before).toHaveLength(4);
    const r = await cli(['ledger', 'export', '--db', copy, '--out', copy]);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toMatch(
      /^retrysafe: --out .*: a SQLite database \(the ledger\?\): not overwritten/,
    );
    expect(await records(copy)).toEqual(before);
  });

  it('the default ledger is ./retrysafe.db in the working directory', async () => {
    const r = await cliJson(['ledger', 'ls'], dir);
    expect(r.code).toBe(0);
    expect(r.body).toHaveLength(4);
  });

  it('show prints the record, the handoff packet and the receipts — never the params', async () => {
    const r = await cliJson(['ledger', 'show', ids.A, '--db', db], dir);
    expect(r.code).toBe(0);
    expect(r.body.record).toMatchObject({ businessOperationId: ids.A, state: 'handed-off', providerKey: keyA });
    expect(r.body.record.handoff.reason).toBe('lookup-window-exhausted');
    expect(r.body.record.handoff.safeNextActions.map((a: any) => a.action)).toEqual(['resume', 'mark-done', 'abandon']);
    expect(r.body.receipts.length).toBeGreaterThanOrEqual(2);
    expect(r.body.receipts.map((x: any) => x.kind)).toContain('dispatch');
    expect(r.stdout).not.toContain('order-A');
    const text = await cli(['ledger', 'show', ids.A, '--db', db], { cwd: dir });
    expect(text.stdout).toContain('Handed off: lookup-window-exhausted');
    const at = r.body.record.handoff.createdAt;
    expect(text.stdout).toContain(
      `resolve with: retrysafe ledger resolve ${ids.A} --db ${db} --handoff-at ${at} --resume`,
    );
    expect(text.stdout).toMatch(/#1\s+\S+\s+dispatch/);
  });

  it('the commands handoffs and show suggest name the ledger they read (as --db or --config named it)', async () => {
    const elsewhere = tempDir('ledger-elsewhere'); // where ./retrysafe.db is not this ledger
    for (const target of [
      ['--db', db],
      ['--config', config],
    ]) {
      const handoffs = await cli(['ledger', 'handoffs', ...target], { cwd: elsewhere });
      const show = await cli(['ledger', 'show', ids.A, ...target], { cwd: elsewhere });
      const suggested = `${handoffs.stdout}\n${show.stdout}`
        .split('\n')
        .filter((l) => /resolve with:|Inspect one with:/.test(l));
      expect(suggested).toHaveLength(5); // three handoffs to resolve, one to inspect; the one shown
      for (const line of suggested)
        expect(line).toMatch(new RegExp(` retrysafe ledger (resolve|show) \\S+ ${target.join(' ')}( |$)`));
    }
  });

  it('show of an id that is not in the ledger exits 1', async () => {
    const r = await cli(['ledger', 'show', 'sandbox.records.create:0000', '--db', db], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no operation sandbox.records.create:0000 in the ledger');
    // and what to do: the listing of that same ledger, to find the id (or see it is the wrong ledger)
    expect(r.stderr).toContain(`retrysafe ledger ls --db ${db} lists the operations it holds`);
    const verify = await cli(['ledger', 'verify', 'sandbox.records.create:0000', '--db', db], { cwd: dir });
    expect(verify.stderr).toContain(`retrysafe ledger ls --db ${db} lists the operations it holds`);
    const resolve = await cli(['ledger', 'resolve', 'sandbox.records.create:0000', '--abandon', '--db', db], {
      cwd: dir,
    });
    expect([resolve.code, resolve.stderr]).toEqual([
      1,
      `retrysafe: no operation sandbox.records.create:0000 in the ledger: retrysafe ledger ls --db ${db} lists the operations it holds\n`,
    ]);
  });

  it('handoffs lists the three operations waiting for a person with their safe actions', async () => {
    const r = await cliJson(['ledger', 'handoffs', '--db', db], dir);
    expect(r.code).toBe(0);
    expect(r.body.map((x: any) => x.businessOperationId).sort()).toEqual([ids.A, ids.B, ids.C].sort());
    const b = r.body.find((x: any) => x.businessOperationId === ids.B);
    expect(b.lastKnown).toMatchObject({ outcome: 'rejected', status: 400 });
    const text = await cli(['ledger', 'handoffs', '--db', db], { cwd: dir });
    expect(text.stdout).toContain('3 operations waiting for a person');
  });

  it('resolve --resume completes a handed-off operation with the SAME provider key (no second record)', async () => {
    const before = sandbox.proxy.requests.length;
    const r = await cliJson(['ledger', 'resolve', ids.A, '--resume', '--config', config, '--by', 'ops-test'], dir);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.body).toMatchObject({ status: 'done', businessOperationId: ids.A });
    const after = sandbox.proxy.requests.slice(before);
    expect(after.length).toBeGreaterThan(0);
    // every request the resume made carried A's key: the POST in its header, a lookup in its query
    for (const q of after) {
      if (q.method === 'POST') expect(q.headers['idempotency-key']).toBe(keyA);
      else expect(decodeURIComponent(q.path)).toContain(keyA);
    }
    expect(after.some((q) => q.method === 'POST')).toBe(true);
    // the provider folded the re-send into the record it already had: A + D, nothing more
    expect(sandbox.provider.count()).toBe(2);
    const shown = await cliJson(['ledger', 'show', ids.A, '--db', db], dir);
    expect(shown.body.record).toMatchObject({ state: 'succeeded', providerKey: keyA });
    expect(shown.body.receipts.some((x: any) => x.kind === 'resolve' && x.decision.action === 'resume')).toBe(true);
  });

  it('resume is refused (exit 1, nothing sent) when the packet marks it not safe: a rejected request would be rejected again', async () => {
    const before = sandbox.proxy.requests.length;
    const r = await cliJson(['ledger', 'resolve', ids.B, '--resume', '--config', config], dir);
    expect(r.code).toBe(1);
    expect(r.body.error.code).toBe('REFUSED');
    expect(r.stderr).toContain('the handoff packet marks resume as not safe');
    expect(r.stderr).toContain('--mark-done <providerRef>');
    expect(sandbox.proxy.requests.length).toBe(before);
    const still = await cliJson(['ledger', 'show', ids.B, '--db', db], dir);
    expect(still.body.record.state).toBe('handed-off');
  });

  it('resolving an operation that is no longer handed off exits 1 and says why', async () => {
    const r = await cli(['ledger', 'resolve', ids.A, '--abandon', '--db', db], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/only a handed-off operation can be resolved/);
  });

  it('resolve --mark-done records the provider reference a person verified; --abandon gives up; neither calls the provider', async () => {
    const before = sandbox.proxy.requests.length;
    const done = await cliJson(
      [
        'ledger',
        'resolve',
        ids.B,
        '--mark-done',
        'rec_verified_1',
        '--by',
        'Dana Operator <dana@example.test>',
        '--db',
        db,
      ],
      dir,
    );
    expect(done.code).toBe(0);
    expect(done.body).toEqual({
      status: 'resolved',
      businessOperationId: ids.B,
      state: 'succeeded',
      providerRef: 'rec_verified_1',
    });
    const gone = await cliJson(['ledger', 'resolve', ids.C, '--abandon', '--db', db], dir);
    expect(gone.code).toBe(0);
    expect(gone.body).toMatchObject({ status: 'resolved', state: 'abandoned' });
    expect(sandbox.proxy.requests.length).toBe(before);
    const handoffs = await cliJson(['ledger', 'handoffs', '--db', db], dir);
    expect(handoffs.body).toEqual([]);
    const shownB = await cliJson(['ledger', 'show', ids.B, '--db', db], dir);
    expect(shownB.body.record.resolution).toMatchObject({ action: 'mark-done', providerRef: 'rec_verified_1' });
    // `--by` is stored as given, shown (and written into receipts and logs) as a pseudonym unless asked.
    expect(shownB.body.record.resolution.by).toMatch(/^person#[0-9a-f]{12}$/);
    const shownText = await cli(['ledger', 'show', ids.B, '--db', db]);
    expect(shownText.stdout).not.toContain('Dana');
    expect(shownText.stdout).toContain(shownB.body.record.resolution.by);
    // The packet it was resolved from is history: no next actions, no command that would now be refused.
    expect(shownText.stdout).toMatch(/Handed off: /);
    expect(shownText.stdout).not.toMatch(/next actions:|resolve with:/);
    const revealed = await cliJson(['ledger', 'show', ids.B, '--db', db, '--show-by'], dir);
    expect(revealed.body.record.resolution.by).toBe('Dana Operator <dana@example.test>');
  });
});

describe('retrysafe ledger resolve --resume with the real Stripe SDK', () => {
  it('an invoice whose every response was lost is handed off; resume re-sends with the same Idempotency-Key and Stripe replays it: one invoice', async () => {
    const sdir = tempDir('ledger-stripe');
    const sdb = join(sdir, 'retrysafe.db');
    const stripe = await startStripeSandbox({ port: 0 });
    let lose = true;
    const sproxy = await startFaultProxy({ target: stripe.url, faults: () => (lose ? 'drop-response' : 'pass') });
    try {
      const ledger = createSqliteLedger({ path: sdb });
      const adapter = createStripeAdapter({ apiKey: 'sk_test_cli', baseUrl: sproxy.url, timeoutMs: 2000 });
      const first = await createRunner({ ledger, clock: createDrillClock() }).run(adapter, 'invoices.create', {
        params: { customer: 'cus_fixture', invoiceRef: 'inv-cli-1' },
      });
      const key = (await ledger.get(first.businessOperationId))!.providerKey!;
      await ledger.close();
      expect(first.status).toBe('handed-off');
      expect(stripe.count('invoices.create')).toBe(1); // Stripe created it; no answer ever came back
      expect(new Set(sproxy.requests.map((q) => q.headers['idempotency-key']))).toEqual(new Set([key]));

      lose = false;
      const before = sproxy.requests.length;
      const config = writeJson(sdir, 'retrysafe.json', {
        ledger: './retrysafe.db',
        adapters: { stripe: { apiKeyEnv: 'RS_CLI_TEST_STRIPE_KEY', baseUrl: sproxy.url, timeoutMs: 2000 } },
      });
      const r = await cli(['ledger', 'resolve', first.businessOperationId, '--resume', '--config', config, '--json'], {
        cwd: sdir,
        env: { RS_CLI_TEST_STRIPE_KEY: 'sk_test_cli' },
      });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({
        status: 'done',
        adopted: true,
        providerRef: expect.stringMatching(/^in_/),
      });
      const resent = sproxy.requests.slice(before);
      expect(resent.length).toBeGreaterThan(0);
      for (const q of resent) expect(q.headers['idempotency-key']).toBe(key);
      expect(stripe.count('invoices.create')).toBe(1);
    } finally {
      await sproxy.close();
      await stripe.close();
    }
  }, 120_000);
});

describe('retrysafe ledger on PostgreSQL', () => {
  const url = process.env.DATABASE_URL;
  const schema = `rs_t_cli_${randomBytes(4).toString('hex')}`;
  let id = '';

  beforeAll(async () => {
    // Like @retrysafe/ledger-postgres's own tests: a real PostgreSQL is required (.ci/run starts one), never skipped.
    if (!url)
      throw new Error(
        'DATABASE_URL is not set: `source .ci/start-postgres.sh` starts a loopback PostgreSQL and exports it',
      );
    expect(['127.0.0.1', 'localhost', '::1']).toContain(new URL(url).hostname);
    const ledger = createPostgresLedger({ connectionString: url, schema });
    try {
      const p = createSandboxProvider({ ...REPLAYING_BEHAVIOUR });
      const r = await createRunner({ ledger }).run(createSandboxAdapter({ provider: p }), 'records.create', {
        params: { ref: 'pg-1' },
      });
      expect(r.status).toBe('done');
      id = r.businessOperationId;
    } finally {
      await ledger.close();
    }
  }, 60_000);

  afterAll(async () => {
    if (!url) return;
    const pg = createRequire(join(REPO, 'packages/ledger-postgres/package.json'))('pg');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  });

  it('ls --db postgres://… --schema lists the operation', async () => {
    const r = await cliJson(['ledger', 'ls', '--db', url!, '--schema', schema], dir);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.body).toEqual([
      expect.objectContaining({ businessOperationId: id, state: 'succeeded', operation: 'sandbox.records.create' }),
    ]);
    const shown = await cliJson(['ledger', 'show', id, '--db', url!, '--schema', schema], dir);
    expect(shown.body.receipts.length).toBeGreaterThan(0);
    const h = await cliJson(['ledger', 'handoffs', '--db', url!, '--schema', schema], dir);
    expect(h.body).toEqual([]);
  });

  it('a schema holding no ledger (mistyped) is exit 2 saying so, and nothing is created in it', async () => {
    const typo = `${schema}_typo`;
    for (const args of [
      ['ledger', 'ls'],
      ['ledger', 'verify', '--all'],
      ['ledger', 'resolve', id, '--abandon'],
    ]) {
      const r = await cli([...args, '--db', url!, '--schema', typo], { cwd: dir });
      expect(r.stderr).toMatch(new RegExp(`schema ${typo} holds no retrysafe ledger`));
      expect(r.code).toBe(2);
    }
    const pg = createRequire(join(REPO, 'packages/ledger-postgres/package.json'))('pg');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [typo]);
    await client.end();
    expect(rows).toEqual([]);
  });

  it('--busy-timeout on a PostgreSQL or DynamoDB ledger is exit 2 naming it, not silently ignored', async () => {
    const dynamo = writeJson(dir, 'dynamo.json', {
      ledger: { dynamodb: { table: 'retrysafe', region: 'local', endpoint: 'http://127.0.0.1:1' } },
      adapters: { sandbox: { baseUrl: 'http://127.0.0.1:9/' } },
    });
    for (const target of [
      ['--db', 'postgres://postgres@127.0.0.1:1/x'],
      ['--config', dynamo],
    ]) {
      const r = await cli(['ledger', 'ls', ...target, '--busy-timeout', '200'], { cwd: dir });
      expect(r.stderr).toMatch(/--busy-timeout applies to a SQLite ledger only/);
      expect(r.code).toBe(2);
    }
  });

  it('a database that cannot be reached or does not exist is one line saying so (exit 1), never a stack', async () => {
    const nodb = new URL(url!);
    nodb.pathname = `/${schema}_nodb`;
    for (const at of ['postgres://postgres@127.0.0.1:1/x', nodb.href]) {
      const r = await cli(['ledger', 'ls', '--db', at], { cwd: dir });
      expect(r.stderr).toMatch(/^retrysafe: .*failed in PostgreSQL \((ECONNREFUSED|3D000)\)/);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.code).toBe(1);
    }
  });
});
