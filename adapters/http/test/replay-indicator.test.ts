import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { createSandboxProvider, REPLAYING_BEHAVIOUR, startSandboxServer } from '@retrysafe/sandbox';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpAdapter, type HttpOperationSpec, ietfOrdersCreate } from '../src/index.js';
import { sandboxRecords } from './helpers.js';

// A provider that marks replays with a header (the retrysafe sandbox: `Idempotent-Replayed: true`),
// reached through the generic HTTP adapter. Two workers with ledgers of their own send the same
// intent: the second gets the stored result back.
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

function recordsSpec(indicator: { header: string; value: string } | null): HttpOperationSpec {
  const { storedResult } = ietfOrdersCreate('acme').card;
  return sandboxRecords({
    storedResult: {
      ...storedResult,
      replayIndicator: {
        value: indicator,
        source: 'retrysafe sandbox: adapters/sandbox/src/sandbox-server.ts (replays carry Idempotent-Replayed: true)',
      },
    },
  });
}

async function twoWorkers(indicator: { header: string; value: string } | null) {
  const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR });
  const server = await startSandboxServer({ provider, port: 0 });
  closers.push(() => server.close());
  const adapter = createHttpAdapter({
    provider: 'acme',
    baseUrl: server.url,
    timeoutMs: 2000,
    operations: { 'orders.create': recordsSpec(indicator) },
  });
  const params = { customer: 'cus_1', sku: 'sku_1', quantity: 1, orderRef: 'R-1' };
  const a = await createRunner({ ledger: createMemoryLedger() }).run(adapter, 'orders.create', { params });
  const b = await createRunner({ ledger: createMemoryLedger() }).run(adapter, 'orders.create', { params });
  return { provider, a, b };
}

describe('the card’s replay indicator in the generic HTTP adapter (issue 16)', () => {
  it('declared: the second worker’s replayed 2xx is reported adopted, one record', async () => {
    const { provider, a, b } = await twoWorkers({ header: 'Idempotent-Replayed', value: 'true' });
    expect(a).toMatchObject({ status: 'done', adopted: false });
    expect(b).toMatchObject({ status: 'done', adopted: true });
    expect(b.status === 'done' && a.status === 'done' && b.providerRef === a.providerRef).toBe(true);
    expect(provider.count()).toBe(1);
  });

  it('declared none: the same replay looks fresh (what every card said before the field existed)', async () => {
    const { provider, b } = await twoWorkers(null);
    expect(b).toMatchObject({ status: 'done', adopted: false });
    expect(provider.count()).toBe(1);
  });
});
