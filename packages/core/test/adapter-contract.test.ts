// Issue 40 item 5: what an adapter hands the runner is checked like user input. A provider key that
// is not a provider key (a derivation that throws, 42, '', an object, null where the card says the key
// travels, longer than the card allows, outside its charset) is an AdapterContractError before the claim: no row, no call.
// An answer to a call that is not an outcome (the request went out) is an unknown outcome, looked up
// before anything else: never a rejection or a handoff on the adapter's word alone.

import { AdapterConfigurationError, type AdapterV1 } from '@retrysafe/contract';
import { AdapterContractError } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

const OP = 'records.create';

/** The sandbox adapter with one method replaced (its other methods keep their `this`). */
function withMethod(
  adapter: AdapterV1,
  name: 'deriveProviderKey' | 'doExecute',
  make: (original: (...a: never[]) => unknown) => (...a: never[]) => unknown,
): AdapterV1 {
  const original = (adapter[name] as (...a: never[]) => unknown).bind(adapter);
  return Object.create(adapter, { [name]: { value: make(original) } }) as AdapterV1;
}

const badKeys: readonly (readonly [string, (original: (...a: never[]) => unknown) => (...a: never[]) => unknown])[] = [
  [
    'a derivation that throws',
    () => () => {
      throw new Error('key service down');
    },
  ],
  ['a number (42)', () => () => 42],
  ['an empty string', () => () => ''],
  ['an object', () => () => ({ key: 'k' })],
  ['null where the card says the key travels', () => () => null],
  ['a key longer than the card allows', () => () => 'k'.repeat(10_000)],
  ["a key with characters outside the card's charset (a space)", () => () => 'rs-order 17'],
  ["a key with characters outside the card's charset (non-ASCII)", () => () => 'rs-commande-é'],
];

describe('the provider key an adapter derives', () => {
  it.each(badKeys)('%s: AdapterContractError before the claim, no row, no provider call', async (_name, make) => {
    const { provider, adapter, ledger, runner } = setup();
    const bad = withMethod(adapter, 'deriveProviderKey', make);
    const err = await runner.run(bad, OP, { params: { ref: 'key-1', amount: 1 } }).catch((e: unknown) => e);
    expect(AdapterContractError.isInstance(err), String(err)).toBe(true);
    expect(err).toMatchObject({ code: 'RETRYSAFE_ADAPTER_CONTRACT', provider: 'sandbox', operation: OP });
    expect(await ledger.list()).toEqual([]);
    expect(provider.calls()).toBe(0);
  });

  it('a good key still runs', async () => {
    const { provider, adapter, runner } = setup();
    expect((await runner.run(adapter, OP, { params: { ref: 'key-ok', amount: 1 } })).status).toBe('done');
    expect(provider.count()).toBe(1);
  });
});

const badAnswers: readonly (readonly [string, unknown])[] = [
  ['a number', 42],
  ['null', null],
  ['a rejection without a reason', { kind: 'rejected', message: 'no' }],
  ['a rejection with a reason that is none', { kind: 'rejected', reason: 'bogus', message: 'no' }],
  ['an unknown outcome without a cause', { kind: 'unknown', message: '?' }],
  ['a Retry-After that is not a number', { kind: 'not-applied', message: 'later', retryAfterMs: 'soon' }],
  ['a negative Retry-After', { kind: 'in-progress', retryAfterMs: -5 }],
  ['a status that is not a number', { kind: 'succeeded', result: {}, status: '200' }],
];

describe('an answer that is not an outcome, after the request went out', () => {
  it.each(badAnswers)('%s: unknown, looked up, the effect adopted — one effect, no handoff', async (_name, answer) => {
    const { provider, adapter, runner } = setup();
    const bad = withMethod(adapter, 'doExecute', (original) => async (...a) => {
      await original(...a);
      return answer;
    });
    const r = await runner.run(bad, OP, { params: { ref: 'answer-1', amount: 1 } });
    expect(r.status).toBe('done');
    expect(r.status === 'done' && r.adopted).toBe(true);
    expect(r.status === 'done' && r.receipts[0]).toMatchObject({
      kind: 'dispatch',
      outcome: 'unknown',
      message: 'adapter returned something that is not an outcome',
    });
    expect(provider.count()).toBe(1);
  });
});

describe("an operation's intent fields are its card's", () => {
  it('a spec whose intentFields differ from card.businessOperationId.intentFields: AdapterConfigurationError before the claim, no row, no call', async () => {
    const { provider, adapter, ledger, runner } = setup();
    const spec = adapter.operations[OP]!;
    // The card says the intent is `ref`; this spec would derive the id from `ref` and `amount`.
    const drifting = Object.create(adapter, {
      operations: { value: { [OP]: { ...spec, intentFields: ['ref', 'amount'] } } },
    }) as AdapterV1;
    for (const amount of [1, 2]) {
      const err = await runner.run(drifting, OP, { params: { ref: 'order-9', amount } }).catch((e: unknown) => e);
      expect(AdapterConfigurationError.isInstance(err), String(err)).toBe(true);
    }
    expect(await ledger.list()).toEqual([]);
    expect(provider.calls()).toBe(0);
  });

  it('the same fields in another order still run', async () => {
    const { provider, adapter, runner } = setup({}, {}, { intentFields: ['ref', 'amount'] } as never);
    const spec = adapter.operations[OP]!;
    const reordered = Object.create(adapter, {
      operations: { value: { [OP]: { ...spec, intentFields: ['amount', 'ref'] } } },
    }) as AdapterV1;
    expect((await runner.run(reordered, OP, { params: { ref: 'order-10', amount: 1 } })).status).toBe('done');
    expect(provider.count()).toBe(1);
  });
});

describe("an operation's card is the adapter's own", () => {
  // A card names its provider and operation; the runner decides from the card, so another's card would run this
  // adapter's calls under that provider's rules.
  it.each([
    ["another provider's card", { provider: 'stripe', operation: `stripe.${OP}` }],
    ["another operation's card", { operation: 'sandbox.records.delete' }],
  ])('%s: AdapterConfigurationError before the claim, naming both, no row, no call', async (_name, foreign) => {
    const { provider, adapter, ledger, runner } = setup();
    const spec = adapter.operations[OP]!;
    const carrying = Object.create(adapter, {
      operations: { value: { [OP]: { ...spec, card: { ...spec.card, ...foreign } } } },
    }) as AdapterV1;
    const err = await runner.run(carrying, OP, { params: { ref: 'order-11', amount: 1 } }).catch((e: unknown) => e);
    expect(AdapterConfigurationError.isInstance(err), String(err)).toBe(true);
    expect(String(err)).toContain(foreign.operation);
    expect(String(err)).toContain(`sandbox.${OP}`);
    expect(await ledger.list()).toEqual([]);
    expect(provider.calls()).toBe(0);
  });
});
