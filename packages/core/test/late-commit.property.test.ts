// Issue 15 item 1: the at-most-once property searched over late commits — the provider applies a request
// after the client gave up (sandbox fault `late-commit`), in a run and across a takeover by recover().
// The class "a lookup without key folding" can only be safe once decide() waits out the card's
// lookup.lateApplyBound (h24); until the sandbox card declares that bound, the property searches every
// other behaviour and the class is covered by the drills' negative controls.

import { createMemoryLedger, createRunner } from '@retrysafe/core';
import {
  createSandboxAdapter,
  createSandboxProvider,
  type SandboxBehaviour,
  type SandboxFault,
} from '@retrysafe/sandbox';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { commonFaultArbs, sandboxBehaviourArb, sandboxOnVirtualClock } from './property-helpers.js';

const faultArb: fc.Arbitrary<SandboxFault> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('late-commit' as const), afterMs: fc.integer({ min: 0, max: 120_000 }) }),
  },
  ...commonFaultArbs(30_000),
);

const policyArb = fc.record({
  maxAttempts: fc.integer({ min: 1, max: 6 }),
  maxElapsedMs: fc.integer({ min: 1000, max: 300_000 }),
  lookupWindowMs: fc.integer({ min: 0, max: 120_000 }),
});

/** Whether the sandbox card bounds how late a request may still be applied (the late-apply row can then use it). */
function declaresLateApplyBound(behaviour: SandboxBehaviour): boolean {
  const card = createSandboxAdapter({ provider: createSandboxProvider(behaviour) }).operations['records.create']!.card;
  return 'lateApplyBound' in (card.lookup as object);
}
/**
 * Today's runner trusts an early "not found", or re-sends with the same key while the late request may
 * still be landing, on these: a lookup without key folding, and a provider that duplicates a same-key
 * request while the first is still processing (found by this property, seed 638784041). Both wait for
 * the late-apply row.
 */
const needsLateApplyRow = (b: SandboxBehaviour) =>
  !declaresLateApplyBound(b) &&
  ((b.lookup === 'get-by-key' && !b.replays) || (b.concurrency === 'duplicates' && (b.processingMs ?? 0) > 0));

describe('at most one record when the provider applies a request late (fast-check)', () => {
  it('one run, then the provider settles every late commit', async () => {
    let searched = 0;
    await fc.assert(
      fc.asyncProperty(
        sandboxBehaviourArb,
        fc.array(faultArb, { minLength: 1, maxLength: 5 }),
        policyArb,
        async (behaviour, faults, policy) => {
          fc.pre(!needsLateApplyRow(behaviour));
          searched++;
          const { clock, provider, adapter } = sandboxOnVirtualClock(behaviour, faults);
          const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5, policy });
          const r = await runner.run(adapter, 'records.create', { params: { ref: 'late-1' } });
          await provider.settle();
          expect(provider.count()).toBeLessThanOrEqual(1);
          if (r.status === 'done') expect(provider.count()).toBe(1);
        },
      ),
      { numRuns: 300, maxSkipsPerRun: 1000 },
    );
    expect(searched).toBe(300);
  });

  it('a worker dies with its request in flight (applied late), recover() takes over: at most one record', async () => {
    await fc.assert(
      fc.asyncProperty(
        sandboxBehaviourArb,
        fc.integer({ min: 0, max: 120_000 }),
        policyArb,
        async (behaviour, afterMs, policy) => {
          fc.pre(!needsLateApplyRow(behaviour));
          const { clock, provider, adapter } = sandboxOnVirtualClock(behaviour, [{ kind: 'late-commit', afterMs }]);
          const ledger = createMemoryLedger();
          const leaseMs = 5000;
          // The worker "dies" inside its first provider call: the request is in flight, the answer never comes back.
          const inner = adapter.doExecute.bind(adapter);
          let died!: () => void;
          const dead = new Promise<void>((r) => (died = r));
          const dying = {
            ...adapter,
            doExecute: async (...args: Parameters<typeof inner>) => {
              await inner(...args);
              died();
              return new Promise<never>(() => {});
            },
          };
          const worker = createRunner({ ledger, clock, random: () => 0.5, policy: { ...policy, leaseMs } });
          await Promise.race([
            worker
              .run(dying as typeof adapter, 'records.create', { params: { ref: 'late-crash' } })
              .catch(() => undefined),
            dead,
          ]);
          clock.advance(leaseMs + 1);
          const rescuer = createRunner({ ledger, clock, random: () => 0.5, policy: { ...policy, leaseMs } });
          await rescuer.recover({ adapters: [adapter] });
          const after = await rescuer.run(adapter, 'records.create', { params: { ref: 'late-crash' } });
          await provider.settle();
          expect(provider.count()).toBeLessThanOrEqual(1);
          if (after.status === 'done') expect(provider.count()).toBe(1);
        },
      ),
      { numRuns: 300, maxSkipsPerRun: 1000 },
    );
  });
});
