import type { AdapterV1, RetrySafetyCard } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { operationIdFor } from '../src/conformance.js';

const OP = 'records.create';

/** The sandbox adapter whose card trims its intent field `ref` (what an adapter author may declare). */
function trimmingRef(adapter: AdapterV1): AdapterV1 {
  const spec = adapter.operations[OP]!;
  const normalize = [{ field: 'ref', steps: ['trim'] as const, source: 'test: white space is formatting' }];
  const card = { ...spec.card, businessOperationId: { ...spec.card.businessOperationId, normalize } };
  return { ...adapter, operations: { ...adapter.operations, [OP]: { ...spec, card: card as RetrySafetyCard } } };
}

describe('operationIdFor', () => {
  it("is the id the runner derives, after the card's normalisation", async () => {
    const clock = createVirtualClock();
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now, sleep: clock.sleep });
    const adapter = trimmingRef(createSandboxAdapter({ provider }));
    const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 });
    const params = { ref: ' PO-1 ' };
    const r = await runner.run(adapter, OP, { params });
    expect(operationIdFor(adapter, OP, params)).toBe(r.businessOperationId);
    expect(operationIdFor(adapter, OP, { ref: 'PO-1' })).toBe(r.businessOperationId);
  });
});
