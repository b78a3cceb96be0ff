// Every benchmark runs the runner on this adapter: one the runner refuses (a card the contract has
// outgrown) stops `pnpm bench`, even its `--quick` smoke run, before it measures anything.
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { expect, it } from 'vitest';
import { createNoopAdapter } from '../src/noop-adapter.mjs';

it('the no-op adapter the benchmarks measure runs through the runner', async () => {
  const runner = createRunner({ ledger: createMemoryLedger() });
  const r = await runner.run(createNoopAdapter(), 'orders.create', { params: { orderRef: 'A-17' } });
  expect(r.status).toBe('done');
});
