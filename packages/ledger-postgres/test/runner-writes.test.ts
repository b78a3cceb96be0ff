// The runner's clean path on PostgreSQL: two ledger writes (each one statement, one commit) — the claim
// that creates the operation already dispatched, then `succeeded` with the attempt's receipt.

import type { ClaimInput, Ledger, StatePatch } from '@retrysafe/contract';
import { createRunner, verifyReceiptChain } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresLedger } from '../src/index.js';
import { readyLedger, testSchema } from './pg-test-db.js';

const schema = testSchema('runner_writes');
let ledger: PostgresLedger;

beforeAll(async () => {
  ledger = await readyLedger(schema);
});
afterAll(async () => {
  await ledger?.close();
});

function recording(inner: Ledger) {
  const writes: string[] = [];
  const proxy = new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      const fn = v as (...a: unknown[]) => unknown;
      return (...args: unknown[]) => {
        if (prop === 'claim') writes.push(`claim${(args[0] as ClaimInput).dispatch ? '+dispatched' : ''}`);
        else if (prop === 'setState')
          writes.push(`setState(${(args[1] as StatePatch).state})${(args[1] as StatePatch).receipt ? '+receipt' : ''}`);
        else if (
          ['renewLease', 'markDispatched', 'handOff', 'appendReceipt', 'release', 'resolve'].includes(String(prop))
        )
          writes.push(String(prop));
        return fn.apply(target, args);
      };
    },
  });
  return { proxy, writes };
}

describe('the runner on the PostgreSQL ledger', () => {
  it('a clean run is two writes, and the operation ends succeeded with its one receipt', async () => {
    const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
    const adapter = createSandboxAdapter({ provider });
    const { proxy, writes } = recording(ledger);
    const r = await createRunner({ ledger: proxy, owner: 'w-clean' }).run(adapter, 'records.create', {
      params: { ref: 'pg-clean-1' },
    });
    expect(r.status).toBe('done');
    if (r.status !== 'done') return;
    expect(writes).toEqual(['claim+dispatched', 'setState(succeeded)+receipt']);
    expect(provider.count()).toBe(1);
    expect(await ledger.get(r.businessOperationId)).toMatchObject({
      state: 'succeeded',
      attemptCount: 1,
      providerRef: r.providerRef,
      leaseOwner: null,
    });
    const stored = await ledger.receipts(r.businessOperationId);
    expect(stored.map((x) => [x.seq, x.kind, x.outcome])).toEqual([[1, 'dispatch', 'succeeded']]);
    expect(stored).toEqual(r.receipts);
    expect(verifyReceiptChain(stored)).toEqual({ ok: true });
  });
});
