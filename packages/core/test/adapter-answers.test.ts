// What the runner does with an adapter that breaks the contract at the call (doExecute): it answers with
// a plain value instead of a promise, throws before returning one, or returns something that is no
// outcome. The call is wrapped by the runner's heartbeat (lease.ts: not an async function), so each of
// these must still reach the runner's classification and never escape as a TypeError or hang the run.

import { type AdapterV1, ConflictError, type Outcome } from '@retrysafe/contract';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

const OP = 'records.create';

function wrapped(adapter: AdapterV1, doExecute: AdapterV1['doExecute']): AdapterV1 {
  return { ...adapter, doExecute };
}

describe('an adapter call that is not a promise of an outcome', () => {
  it('a plain outcome (no promise) is taken as the answer', async () => {
    const { adapter, runner } = setup();
    const plain = wrapped(
      adapter,
      ((_op: string, params: { ref: string }) =>
        ({
          kind: 'succeeded',
          result: { id: `r_${params.ref}` },
          providerRef: `r_${params.ref}`,
        }) as Outcome) as unknown as AdapterV1['doExecute'],
    );
    const r = await runner.run(plain, OP, { params: { ref: 'plain-1' } });
    expect(r).toMatchObject({ status: 'done', providerRef: 'r_plain-1', adopted: false, attempts: 1 });
  });

  it('a throw before any promise is an unknown outcome, reconciled by lookup, never a TypeError', async () => {
    const { adapter, runner, provider } = setup({ replays: false, retentionMs: null });
    let calls = 0;
    const throwing = wrapped(adapter, ((..._args: unknown[]) => {
      calls++;
      throw new Error('socket hang up before the promise');
    }) as unknown as AdapterV1['doExecute']);
    const r = await runner.run(throwing, OP, { params: { ref: 'throw-1' } });
    // Nothing reached the provider; an unknown outcome on a provider that does not replay is handed to a person.
    expect(provider.count()).toBe(0);
    expect(calls).toBe(1);
    expect(r.status).toBe('handed-off');
    if (r.status !== 'handed-off') throw new Error(r.status);
    expect(r.receipts[0]).toMatchObject({ kind: 'dispatch', outcome: 'unknown' });
  });

  it('an answer that is not an outcome is an unknown outcome', async () => {
    const { adapter, runner } = setup({ replays: false, retentionMs: null });
    const garbage = wrapped(adapter, (async () => ({ ok: true })) as unknown as AdapterV1['doExecute']);
    const r = await runner.run(garbage, OP, { params: { ref: 'garbage-1' } });
    expect(r.status).toBe('handed-off');
    if (r.status !== 'handed-off') throw new Error(r.status);
    expect(r.receipts[0]).toMatchObject({
      kind: 'dispatch',
      outcome: 'unknown',
      message: 'adapter returned something that is not an outcome',
    });
  });
});

describe('a rejection whose `created` the runner cannot read', () => {
  it('is not taken as "nothing created": a corrected call sends nothing, the first object stays the only one', async () => {
    const { adapter, runner } = setup();
    let sent = 0;
    const leaves = wrapped(adapter, (async () => {
      sent++;
      // What a JavaScript adapter can return for a provider whose ids are numbers (the contract says a string).
      return { kind: 'rejected', reason: 'card-declined', message: 'declined', created: 4711 };
    }) as unknown as AdapterV1['doExecute']);
    const first = await runner.run(leaves, OP, { params: { ref: 'left-1', note: 'card a' } });
    expect(first.status).toBe('handed-off');
    const before = sent;
    const corrected = await runner.run(leaves, OP, { params: { ref: 'left-1', note: 'card b' } }).catch((e) => e);
    expect(sent).toBe(before);
    expect(ConflictError.isInstance(corrected)).toBe(true);
  });
});

describe('a provider reference no ledger can store (U+0000, a lone surrogate) in an answer the receipts keep', () => {
  it('still hands the operation off (the packet names the last reference a ledger can store), never left open for ever', async () => {
    const { adapter, runner, ledger, clock } = setup();
    const refusedEachTime = wrapped(adapter, (async () => ({
      kind: 'not-applied',
      message: 'throttled',
      providerRef: 'req\u0000\uD800',
    })) as unknown as AdapterV1['doExecute']);
    const r = await runner.run(refusedEachTime, OP, { params: { ref: 'nul-ref-1' } });
    expect(r.status).toBe('handed-off');
    if (r.status !== 'handed-off') throw new Error(r.status);
    expect(r.packet.lastKnown).not.toHaveProperty('providerRef');
    expect(r.packet.attempts[0]).toMatchObject({ providerRef: 'req\u0000\uD800' });
    clock.advance(3_600_000);
    expect(await runner.recover({ adapters: [refusedEachTime] })).toEqual([]);
    expect(await ledger.get(r.businessOperationId)).toMatchObject({ state: 'handed-off' });
  });
});
