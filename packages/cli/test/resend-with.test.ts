import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createDrillClock, startFaultProxy, type FaultProxy } from '@retrysafe/testkit';
import { createSandboxAdapter, createSandboxProvider, startSandboxServer, REPLAYING_BEHAVIOUR, type SandboxProvider } from '@retrysafe/sandbox';
import { cli, tempDir } from './helpers.js';

// `retrysafe ledger resolve <id> --resend-with <params.json>` (issue 16): an operator sends the
// corrected request of an operation the provider rejected — never of one that may have been applied.
const dir = tempDir('resend-with');
const db = join(dir, 'retrysafe.db');
const config = join(dir, 'retrysafe.json');
let provider: SandboxProvider;
let server: { url: string; close(): Promise<void> };
let proxy: FaultProxy;
let phase: 'reject' | 'lose' | 'pass' = 'reject';
let rejected = '';
let lost = '';

beforeAll(async () => {
  provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR });
  server = await startSandboxServer({ provider, port: 0 });
  proxy = await startFaultProxy({
    target: server.url,
    faults: () => (phase === 'reject' ? { kind: 'status', status: 400, body: { error: { code: 'invalid_request', message: 'amount must be positive' } } } : phase === 'lose' ? 'drop-response' : 'pass'),
  });
  const ledger = createSqliteLedger({ path: db });
  const runner = createRunner({ ledger, clock: createDrillClock() });
  const adapter = createSandboxAdapter({ baseUrl: proxy.url, timeoutMs: 2000, behaviour: REPLAYING_BEHAVIOUR });
  const r = await runner.run(adapter, 'records.create', { params: { ref: 'order-R', amount: -5 } });
  phase = 'lose';
  const l = await runner.run(adapter, 'records.create', { params: { ref: 'order-L', amount: 5 } });
  expect([r.status, l.status]).toEqual(['handed-off', 'handed-off']);
  rejected = r.businessOperationId;
  lost = l.businessOperationId;
  await ledger.close();
  phase = 'pass';
  writeFileSync(config, JSON.stringify({ ledger: db, adapters: { sandbox: { baseUrl: proxy.url, timeoutMs: 2000, behaviour: REPLAYING_BEHAVIOUR } } }, null, 2));
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await server?.close();
});

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
    const bad = await cli(['ledger', 'resolve', rejected, '--resend-with', join(dir, 'bad.json'), '--config', config], { cwd: dir });
    expect(bad.stderr).toMatch(/must hold a JSON object of params/);
  });

  it('is refused while an attempt may have been applied: a conflict naming the path, nothing sent', async () => {
    const file = join(dir, 'lost.json');
    writeFileSync(file, JSON.stringify({ ref: 'order-L', amount: 6 }));
    const before = proxy.requests.length;
    const r = await cli(['ledger', 'resolve', lost, '--resend-with', file, '--config', config], { cwd: dir });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/different params at amount/);
    expect(r.stderr).toMatch(/cannot be superseded|not allowed/);
    expect(proxy.requests.length).toBe(before);
  });

  it('sends the corrected request of a rejected operation as revision 2: done, one record, receipts show it', async () => {
    const file = join(dir, 'fixed.json');
    writeFileSync(file, JSON.stringify({ ref: 'order-R', amount: 5 }));
    const countBefore = provider.count();
    const r = await cli(['ledger', 'resolve', rejected, '--resend-with', file, '--config', config, '--by', 'ops-test', '--json'], { cwd: dir });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'done', businessOperationId: rejected, adopted: false });
    expect(provider.count()).toBe(countBefore + 1);
    const shown = JSON.parse((await cli(['ledger', 'show', rejected, '--db', db, '--json'], { cwd: dir })).stdout);
    expect(shown.record).toMatchObject({ state: 'succeeded', resolution: { action: 'supersede', revision: 2 } });
    const sup = shown.receipts.find((x: { decision: { action: string } }) => x.decision.action === 'supersede');
    expect(sup.decision.reason).toMatch(/revision 2 \(resend-with by ops-test\)/);
    expect(r.stdout).not.toContain('order-R');
  });
});
