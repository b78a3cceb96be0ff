import { createMemoryLedger, createRunner } from '@retrysafe/core';
import type { SandboxFault } from '@retrysafe/sandbox';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { commonFaultArbs, sandboxBehaviourArb, sandboxOnVirtualClock } from './property-helpers.js';

const faultArb: fc.Arbitrary<SandboxFault> = fc.oneof(
  ...commonFaultArbs(90_000),
  fc.constant({ kind: 'rejected' as const }),
);

const policyArb = fc.record({
  maxAttempts: fc.integer({ min: 1, max: 6 }),
  maxElapsedMs: fc.integer({ min: 1000, max: 300_000 }),
  retryAfterCapMs: fc.integer({ min: 0, max: 60_000 }),
  lookupWindowMs: fc.integer({ min: 0, max: 60_000 }),
});

describe('the runner under random faults, behaviours and limits (fast-check)', () => {
  it('never holds more than one provider record, never exceeds maxAttempts or maxElapsed, never calls sooner than Retry-After', async () => {
    await fc.assert(
      fc.asyncProperty(
        sandboxBehaviourArb,
        fc.array(faultArb, { maxLength: 8 }),
        fc.integer({ min: 0, max: 4 }),
        policyArb,
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        async (behaviour, faults, lookupFailures, policy, rnd) => {
          const { clock, provider, adapter } = sandboxOnVirtualClock(behaviour, faults);
          provider.failNextLookup(lookupFailures, 700);
          const calls: { at: number; answeredAt: number; retryAfterMs?: number }[] = [];
          const inner = provider.execute;
          (provider as { execute: typeof inner }).execute = async (req) => {
            const at = clock.now();
            const res = await inner(req);
            calls.push({
              at,
              answeredAt: clock.now(),
              ...(res.type === 'throttled' ? { retryAfterMs: res.retryAfterMs } : {}),
            });
            return res;
          };
          const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => rnd, policy });
          const start = clock.now();
          const r = await runner.run(adapter, 'records.create', { params: { ref: 'prop-1' } });
          expect(provider.count()).toBeLessThanOrEqual(1);
          if (r.status === 'done') expect(provider.count()).toBe(1);
          expect(calls.length).toBeLessThanOrEqual(policy.maxAttempts);
          for (const c of calls) expect(c.at - start).toBeLessThanOrEqual(policy.maxElapsedMs);
          for (let i = 1; i < calls.length; i++) {
            const asked = calls[i - 1]!.retryAfterMs;
            if (asked !== undefined) expect(calls[i]!.at - calls[i - 1]!.answeredAt).toBeGreaterThanOrEqual(asked);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('two concurrent callers under random faults: at most one record, and never two different results', async () => {
    await fc.assert(
      fc.asyncProperty(
        sandboxBehaviourArb,
        fc.array(faultArb, { maxLength: 6 }),
        policyArb,
        async (behaviour, faults, policy) => {
          const { clock, provider, adapter } = sandboxOnVirtualClock(behaviour, faults);
          const ledger = createMemoryLedger();
          const a = createRunner({ ledger, clock, random: () => 0.3, policy, owner: 'a' });
          const b = createRunner({ ledger, clock, random: () => 0.7, policy, owner: 'b' });
          const results = await Promise.all([
            a.run(adapter, 'records.create', { params: { ref: 'c-1' } }),
            b.run(adapter, 'records.create', { params: { ref: 'c-1' } }),
          ]);
          expect(provider.count()).toBeLessThanOrEqual(1);
          const refs = new Set(results.flatMap((r) => (r.status === 'done' ? [r.providerRef] : [])));
          expect(refs.size).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a worker that dies at any ledger write, then recover() in a new runner: at most one record', async () => {
    await fc.assert(
      fc.asyncProperty(
        sandboxBehaviourArb,
        fc.array(faultArb, { maxLength: 5 }),
        fc.integer({ min: 0, max: 3 }),
        policyArb,
        fc.integer({ min: 1, max: 14 }),
        async (behaviour, faults, lookupFailures, policy, dieAt) => {
          const { clock, provider, adapter } = sandboxOnVirtualClock(behaviour, faults);
          provider.failNextLookup(lookupFailures, 700);
          const ledger = createMemoryLedger();
          // The dying worker's view of the ledger: from its dieAt-th write on, nothing returns (the process is gone).
          let writes = 0;
          let died!: () => void;
          const dead = new Promise<void>((r) => (died = r));
          const WRITES = new Set([
            'claim',
            'renewLease',
            'markDispatched',
            'setState',
            'handOff',
            'appendReceipt',
            'release',
          ]);
          const dying = new Proxy(ledger, {
            get(target, prop, recv) {
              const v = Reflect.get(target, prop, recv);
              if (typeof v !== 'function' || !WRITES.has(String(prop))) return v;
              return (...args: unknown[]) => {
                if (++writes >= dieAt) {
                  died();
                  return new Promise(() => {});
                }
                return v.apply(target, args);
              };
            },
          });
          const leaseMs = 5000;
          const worker = createRunner({ ledger: dying, clock, random: () => 0.5, policy: { ...policy, leaseMs } });
          await Promise.race([
            worker.run(adapter, 'records.create', { params: { ref: 'crash-1' } }).catch(() => undefined),
            dead,
          ]);
          clock.advance(leaseMs + 1);
          const rescuer = createRunner({ ledger, clock, random: () => 0.5, policy: { ...policy, leaseMs } });
          const reports = await rescuer.recover({ adapters: [adapter] });
          expect(provider.count()).toBeLessThanOrEqual(1);
          for (const r of reports) if (r.result?.status === 'done') expect(provider.count()).toBe(1);
          const after = await rescuer.run(adapter, 'records.create', { params: { ref: 'crash-1' } });
          expect(provider.count()).toBeLessThanOrEqual(1);
          if (after.status === 'done') expect(provider.count()).toBe(1);
        },
      ),
      { numRuns: 300 },
    );
  });
});
