import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createSandboxAdapter } from '@retrysafe/sandbox';
import { createDrillClock } from '@retrysafe/testkit';
import { beforeAll, describe, expect, it } from 'vitest';
import { type FaultySandbox, startFaultySandbox } from './faulty-sandbox.js';
import { cli, startCli, tempDir } from './helpers.js';

// `retrysafe ledger resolve <id> --resend-with <params.json>` (issue 16): an operator sends the
// corrected request of an operation the provider rejected — never of one that may have been applied.
const dir = tempDir('resend-with');
const db = join(dir, 'retrysafe.db');
const config = join(dir, 'retrysafe.json');
let sandbox: FaultySandbox;
let rejected = '';
let lost = '';
let intentNamed = '';

beforeAll(async () => {
  sandbox = await startFaultySandbox('reject');
  const ledger = createSqliteLedger({ path: db });
  const runner = createRunner({ ledger, clock: createDrillClock() });
  const r = await runner.run(sandbox.adapter, 'records.create', { params: { ref: 'order-R', amount: -5 } });
  sandbox.setFault('lose');
  const l = await runner.run(sandbox.adapter, 'records.create', { params: { ref: 'order-L', amount: 5 } });
  // In process, where the provider names the field it refused: ref, the intent field.
  sandbox.provider.failNext({ kind: 'rejected', fields: [{ path: 'ref', message: 'unknown order' }] });
  const inProcess = createSandboxAdapter({ provider: sandbox.provider });
  const i = await runner.run(inProcess, 'records.create', { params: { ref: 'order-X', amount: 5 } });
  expect([r.status, l.status, i.status]).toEqual(['handed-off', 'handed-off', 'handed-off']);
  rejected = r.businessOperationId;
  lost = l.businessOperationId;
  intentNamed = i.businessOperationId;
  await ledger.close();
  sandbox.setFault('pass');
  sandbox.writeConfig(config, db);
}, 120_000);

describe('retrysafe ledger resolve --resend-with', () => {
  it('the rejected operation’s packet names --resend-with as safe; the lost one’s does not', async () => {
    const r = await cli(['ledger', 'show', rejected, '--db', db], { cwd: dir });
    expect(r.stdout).toMatch(/resolve with: .*--resend-with <params\.json>/);
    const l = await cli(['ledger', 'show', lost, '--db', db], { cwd: dir });
    expect(l.stdout).not.toContain('--resend-with');
  });

  it('needs --config and a JSON object', async () => {
    const noConfig = await cli(['ledger', 'resolve', rejected, '--resend-with', 'x.json', '--db', db], { cwd: dir });
    expect(noConfig.code).not.toBe(0);
    expect(noConfig.stderr).toMatch(/--resend-with sends through the adapter: pass --config/);
    writeFileSync(join(dir, 'bad.json'), '[1]');
    const bad = await cli(['ledger', 'resolve', rejected, '--resend-with', join(dir, 'bad.json'), '--config', config], {
      cwd: dir,
    });
    expect(bad.stderr).toMatch(/must hold a JSON object of params/);
  });

  it('a rejection naming an intent field: resume and the same params are refused saying nothing applied and a correction is a new operation', async () => {
    const file = join(dir, 'same.json');
    writeFileSync(file, JSON.stringify({ ref: 'order-X', amount: 5 }));
    const before = sandbox.proxy.requests.length;
    for (const how of [['--resume'], ['--resend-with', file]]) {
      const r = await cli(['ledger', 'resolve', intentNamed, ...how, '--config', config], { cwd: dir });
      expect(r.code).not.toBe(0);
      expect(r.stderr).not.toMatch(/check at the provider/i);
      expect(r.stderr).toMatch(/nothing of this one was applied/);
      expect(r.stderr).toMatch(/a new operation the caller makes/);
      expect(r.stderr).toContain(`retrysafe ledger resolve ${intentNamed} --abandon`);
    }
    expect(sandbox.proxy.requests.length).toBe(before);
  });

  it('once resumed with --force and done, its old packet no longer says nothing of it was applied', async () => {
    const resumed = await cli(['ledger', 'resolve', intentNamed, '--resume', '--force', '--config', config], {
      cwd: dir,
    });
    expect(resumed.code).toBe(0);
    const again = await cli(
      ['ledger', 'resolve', intentNamed, '--resend-with', join(dir, 'same.json'), '--config', config],
      {
        cwd: dir,
      },
    );
    expect(again.code).not.toBe(0);
    expect(again.stderr).not.toMatch(/nothing of this one was applied|nothing was sent\. Close it/);
  });

  it('is refused while an attempt may have been applied: a conflict naming the path, nothing sent', async () => {
    const file = join(dir, 'lost.json');
    writeFileSync(file, JSON.stringify({ ref: 'order-L', amount: 6 }));
    const before = sandbox.proxy.requests.length;
    const r = await cli(['ledger', 'resolve', lost, '--resend-with', file, '--config', config], { cwd: dir });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/different params at amount/);
    expect(r.stderr).toMatch(/cannot be superseded|not allowed/);
    expect(sandbox.proxy.requests.length).toBe(before);
  });

  it('sends the corrected request of a rejected operation as revision 2: done, one record, receipts show it', async () => {
    const file = join(dir, 'fixed.json');
    writeFileSync(file, JSON.stringify({ ref: 'order-R', amount: 5 }));
    const countBefore = sandbox.provider.count();
    const r = await cli(
      ['ledger', 'resolve', rejected, '--resend-with', file, '--config', config, '--by', 'ops-test', '--json'],
      { cwd: dir },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'done', businessOperationId: rejected, adopted: false });
    expect(sandbox.provider.count()).toBe(countBefore + 1);
    const shown = JSON.parse((await cli(['ledger', 'show', rejected, '--db', db, '--json'], { cwd: dir })).stdout);
    expect(shown.record).toMatchObject({ state: 'succeeded', resolution: { action: 'supersede', revision: 2 } });
    const sup = shown.receipts.find((x: { decision: { action: string } }) => x.decision.action === 'supersede');
    // The person as a pseudonym (docs/security.md): receipts never carry the name given to --by.
    const person = `person#${createHash('sha256').update('ops-test').digest('hex').slice(0, 12)}`;
    expect(sup.decision.reason).toContain(`revision 2 (resend-with by ${person})`);
    expect(JSON.stringify(shown.receipts)).not.toContain('ops-test');
    expect(r.stdout).not.toContain('order-R');
  });
});

describe('a resolve killed after its request went out', () => {
  it('leaves an open operation that resolve --resume drives as stored once its lease ran out: looked up, adopted, one record', async () => {
    sandbox.setFault('reject');
    const ledger = createSqliteLedger({ path: db });
    const first = await createRunner({ ledger }).run(sandbox.adapter, 'records.create', {
      params: { ref: 'order-K', amount: -5 },
    });
    await ledger.close();
    sandbox.setFault('pass');
    // The CLI's lease as the config sets it: short, so the test need not wait the default 30 s.
    const shortLease = join(dir, 'short-lease.json');
    writeFileSync(
      shortLease,
      JSON.stringify({ ...JSON.parse(readFileSync(config, 'utf8')), policy: { leaseMs: 500 } }),
    );
    const file = join(dir, 'fixed-k.json');
    writeFileSync(file, JSON.stringify({ ref: 'order-K', amount: 5 }));
    const id = first.businessOperationId;
    const countBefore = sandbox.provider.count();
    const killed = startCli(['ledger', 'resolve', id, '--resend-with', file, '--config', shortLease], { cwd: dir });
    sandbox.onRequest(() => {
      sandbox.onRequest(null);
      killed.child.kill('SIGKILL'); // the request reaches the provider; nothing of its answer is recorded
    });
    expect((await killed.done).signal).toBe('SIGKILL');
    const open = JSON.parse((await cli(['ledger', 'show', id, '--db', db, '--json'], { cwd: dir })).stdout);
    expect(open.record.state).toBe('dispatched');
    await new Promise((r) => setTimeout(r, 600));

    const r = await cli(['ledger', 'resolve', id, '--resume', '--config', config, '--json'], { cwd: dir });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'done', businessOperationId: id, adopted: true });
    // The killed request made the one record (the sandbox finishes it after the kill, maybe after a read here); the
    // resume adopted it and made none.
    expect(sandbox.provider.count()).toBe(countBefore + 1);
    const shown = JSON.parse((await cli(['ledger', 'show', id, '--db', db, '--json'], { cwd: dir })).stdout);
    expect(shown.record).toMatchObject({ state: 'succeeded', resolution: { action: 'supersede', revision: 2 } });
  });
});
