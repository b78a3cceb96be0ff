// An adapter that resolves an intent field (doResolveIntent) is asked only once every other intake check passed, and
// the id is derived from its answer: two spellings it resolves to one value are one operation.

import { businessOperationId, InvalidParamsError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';

const OP = 'records.create';

function rig() {
  const clock = createVirtualClock();
  const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now, sleep: clock.sleep });
  const asked: unknown[] = [];
  const adapter = {
    ...createSandboxAdapter({ provider }),
    // The provider's own id of a ref: case does not matter to it.
    doResolveIntent: async (_op: string, intent: Record<string, unknown>) => {
      asked.push(intent);
      return { ...intent, ref: String(intent.ref).toLowerCase() };
    },
  };
  return { provider, adapter, asked, runner: createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 }) };
}

describe('doResolveIntent', () => {
  it('two spellings the adapter resolves to one value ⇒ one operation, one record, the id of the resolved intent', async () => {
    const { provider, adapter, runner } = rig();
    const first = await runner.run(adapter, OP, { params: { ref: 'Rec-1' } });
    expect(first.businessOperationId).toBe(businessOperationId(`sandbox.${OP}`, { ref: 'rec-1' }));
    expect(await runner.run(adapter, OP, { params: { ref: 'rec-1' } }).catch((e: unknown) => e)).toMatchObject({
      businessOperationId: first.businessOperationId,
    });
    expect(provider.count()).toBe(1);
  });

  it('params the schema refuses ⇒ InvalidParamsError, the adapter never asked', async () => {
    const { adapter, asked, runner } = rig();
    await expect(runner.run(adapter, OP, { params: { ref: 7 } as never })).rejects.toThrow(InvalidParamsError);
    expect(asked).toEqual([]);
  });
});
