// Every fenced write names the operation by its id and fence alone: a ledger (ours or a third party's) is
// never handed the record, whose params it did not ask for, on any path — the attempt loop, resolve, recover.
import type { Ledger } from '@retrysafe/contract';
import { createMemoryLedger } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

const FENCED = new Set(['renewLease', 'markDispatched', 'setState', 'handOff', 'appendReceipt', 'release']);

/** The memory ledger, recording the keys of the token each fenced write gets. */
function recording(): { ledger: Ledger; tokens: string[][] } {
  const inner = createMemoryLedger();
  const tokens: string[][] = [];
  const ledger = new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (FENCED.has(String(prop))) tokens.push(Object.keys(args[0] as object).sort());
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { ledger, tokens };
}

describe('fenced writes carry { businessOperationId, fence } only', () => {
  it('on the attempt loop, mark-done, a forced resume and a recovery hand-off', async () => {
    const { ledger, tokens } = recording();
    const { provider, adapter, runner, clock } = setup(
      { replays: false, retentionMs: null, lookup: 'none' },
      { ledger, policy: { leaseMs: 1000 } },
    );
    provider.failNext({ kind: 'unknown-after-commit' });
    const done = await runner.run(adapter, 'records.create', { params: { ref: 'f-1' } });
    await runner.resolve(done.businessOperationId, { action: 'mark-done', providerRef: provider.records()[0]!.id });

    provider.failNext({ kind: 'unknown-after-commit' });
    const resumed = await runner.run(adapter, 'records.create', { params: { ref: 'f-2' } });
    await runner.resolve(resumed.businessOperationId, { action: 'resume', force: true }, { adapters: [adapter] });

    // Left dispatched by a worker that died; recover() has no adapter that can drive it and hands it off.
    const claim = await ledger.claim({
      businessOperationId: 'sandbox.records.create:f-3' as never,
      provider: 'sandbox',
      operation: 'sandbox.records.create',
      intentFingerprint: 'sha256:f3',
      paramsFingerprint: 'sha256:f3',
      params: { ref: 'f-3' },
      providerKey: 'k-f3' as never,
      owner: 'dead',
      leaseMs: 1,
      now: clock.now(),
      dispatch: true,
    });
    expect(claim.kind).toBe('claimed');
    clock.advance(10);
    const broken = { ...adapter, doLookup: () => Promise.reject(new Error('no lookup today')) };
    await runner.recover({ adapters: [broken] });

    expect(tokens.length).toBeGreaterThan(5);
    expect(new Set(tokens.map((t) => t.join(',')))).toEqual(new Set(['businessOperationId,fence']));
  });
});
