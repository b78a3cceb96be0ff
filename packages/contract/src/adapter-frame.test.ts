import { describe, expect, it } from 'vitest';
import { sampleCard } from './__fixtures__/sample-card.js';
import {
  AdapterConfigurationError,
  asBusinessOperationId,
  defineAdapter,
  deriveProviderKey,
  type ExecuteContext,
  type FramedExecuteContext,
  type FramedLookupContext,
  type FrameOperation,
  fact,
  InvalidIntentError,
  type LookupContext,
  newAttemptId,
  newRunId,
  type Outcome,
  type ProviderKey,
  type RetrySafetyCard,
  UnknownOperationError,
  UnsupportedCapabilityError,
} from './index.js';
import { providerKeyShapeProblem, schemaErrors } from './provider/index.js';

const RULE = { maxLength: 40, charset: 'A-Za-z0-9_:.-', prefix: 'k-' };
const schema = {
  type: 'object',
  required: ['customer', 'sku', 'quantity'],
  properties: {
    customer: { type: 'string', minLength: 1 },
    sku: { type: 'string' },
    quantity: { type: 'integer', minimum: 1 },
  },
  additionalProperties: false,
};
const op = (over: Partial<FrameOperation> = {}): FrameOperation => ({
  name: 'orders.create',
  description: 'd',
  card: sampleCard as RetrySafetyCard,
  paramsSchema: schema,
  keyRule: RULE,
  ...over,
});
const valid = { customer: 'c', sku: 's', quantity: 1 };
const id = asBusinessOperationId('order-1');
const ctx = (over: Partial<ExecuteContext> = {}): ExecuteContext => ({
  businessOperationId: id,
  providerKey: null,
  runId: newRunId(),
  attemptId: newAttemptId(),
  attempt: 1,
  statusRef: null,
  ...over,
});
const lctx = (over: Partial<LookupContext> = {}): LookupContext => ({
  ...ctx(),
  params: valid,
  firstDispatchedAt: 1,
  now: 2,
  ...over,
});

function framed(
  over: Partial<FrameOperation> = {},
  execute?: (params: unknown, c: FramedExecuteContext) => Promise<Outcome>,
) {
  const calls: FramedExecuteContext[] = [];
  const adapter = defineAdapter({
    provider: 'example',
    operations: { 'orders.create': op(over) },
    execute: async (_o, params, c) => (
      calls.push(c), execute ? execute(params, c) : { kind: 'succeeded', result: params }
    ),
    lookup: async () => ({ kind: 'not-found', reason: 'none' }),
  });
  return { adapter, calls };
}

describe('schemaErrors: the frame’s subset of JSON Schema', () => {
  it.each([
    [valid, []],
    ['x', [{ path: '(root)', message: 'must be object' }]],
    [{ sku: 's', quantity: 1 }, [{ path: 'customer', message: 'is required' }]],
    [{ ...valid, quantity: 0 }, [{ path: 'quantity', message: 'must be >= 1' }]],
    [{ ...valid, quantity: 1.5 }, [{ path: 'quantity', message: 'must be integer' }]],
    [{ ...valid, customer: '' }, [{ path: 'customer', message: 'must NOT have fewer than 1 characters' }]],
    [{ ...valid, extra: true }, [{ path: 'extra', message: 'is not a field of this operation' }]],
  ] as const)('%j ⇒ %j', (params, errors) => {
    expect(schemaErrors(schema, params)).toEqual(errors);
  });
  it('passes the keywords it does not read (never stricter than the runner’s full check)', () => {
    expect(
      schemaErrors({ type: 'object', $ref: '#/x', if: { required: ['a'] }, then: { required: ['b'] } }, { a: 1 }),
    ).toEqual([]);
    expect(
      schemaErrors({ type: 'object', patternProperties: { '^x': {} }, additionalProperties: false }, { xy: 1 }),
    ).toEqual([]);
  });
  it('compares const and enum as JSON values, as the runner’s check does: key order aside, never stricter', () => {
    expect(schemaErrors({ const: { a: 1, b: [2, { c: 3, d: 4 }] } }, { b: [2, { d: 4, c: 3 }], a: 1 })).toEqual([]);
    expect(schemaErrors({ enum: [{ currency: 'eur', amount: 5 }] }, { amount: 5, currency: 'eur' })).toEqual([]);
    expect(schemaErrors({ enum: [{ currency: 'eur', amount: 5 }] }, { amount: 6, currency: 'eur' })).toHaveLength(1);
    expect(schemaErrors({ const: [1, 2] }, [2, 1])).toHaveLength(1);
  });
  it('never stricter under not or oneOf: a branch with a keyword it does not read cannot be judged, so it is let through', () => {
    // ajv: 'a@b.example' is an email and no uri, so exactly one branch matches
    const recipient = {
      oneOf: [
        { type: 'string', format: 'email' },
        { type: 'string', format: 'uri' },
      ],
    };
    expect(schemaErrors(recipient, 'a@b.example')).toEqual([]);
    expect(schemaErrors({ not: { type: 'string', format: 'email' } }, 'not an email')).toEqual([]);
    // fully read branches are still judged
    expect(schemaErrors({ oneOf: [{ type: 'string' }, { minLength: 1 }] }, 'x')).toHaveLength(1);
    expect(schemaErrors({ not: { type: 'string' } }, 'x')).toHaveLength(1);
  });
  it('reads enum, const, items, propertyNames, not, anyOf and oneOf', () => {
    expect(schemaErrors({ enum: ['a'] }, 'b')).toHaveLength(1);
    expect(schemaErrors({ const: 1 }, 1)).toEqual([]);
    expect(schemaErrors({ type: 'array', items: { type: 'string' }, minItems: 1 }, [1])).toEqual([
      { path: '[0]', message: 'must be string' },
    ]);
    expect(schemaErrors({ type: 'object', propertyNames: { pattern: '^[a-z]+$' } }, { 'Bad Name': 1 })).toEqual([
      { path: 'Bad Name', message: 'is not an allowed property name' },
    ]);
    expect(schemaErrors({ not: { type: 'null' } }, null)).toHaveLength(1);
    expect(schemaErrors({ anyOf: [{ type: 'string' }, { type: 'number' }] }, true)).toHaveLength(1);
    expect(schemaErrors({ oneOf: [{ type: 'number' }, { type: 'integer' }] }, 1)).toHaveLength(1);
  });
});

describe('defineAdapter', () => {
  it('is frozen, carries specificationVersion, exposes only the public spec of each operation', () => {
    const { adapter } = framed();
    expect(adapter.specificationVersion).toBe('v1');
    expect(Object.isFrozen(adapter)).toBe(true);
    expect(Object.isFrozen(adapter.operations)).toBe(true);
    expect(Object.isFrozen(adapter.operations['orders.create'])).toBe(true);
    expect(Object.keys(adapter.operations['orders.create']!)).not.toContain('keyRule');
    expect(adapter.operations['orders.create']!.intentFields).toBe(sampleCard.businessOperationId.intentFields);
  });

  it('account: put on the adapter when given, absent when not; an empty, long or control-character one is refused', () => {
    const define = (account?: string) =>
      defineAdapter({
        provider: 'example',
        account,
        operations: { 'orders.create': op() },
        execute: async () => ({ kind: 'succeeded', result: null }),
        lookup: async () => ({ kind: 'not-found', reason: 'none' }),
      });
    expect(define('acme-eu').account).toBe('acme-eu');
    expect(Object.hasOwn(define(), 'account')).toBe(false);
    for (const bad of ['', 'x'.repeat(201), 'a\u0000b', 'tab\there'])
      expect(() => define(bad)).toThrow(AdapterConfigurationError);
  });

  it('resolveIntent: asked only for the operations that declare resolvesIntent (their public spec says so); given exactly when one does', async () => {
    const asked: string[] = [];
    const note = op({
      name: 'orders.note',
      card: { ...sampleCard, operation: 'example.orders.note' } as RetrySafetyCard,
    });
    const define = (declares: boolean, hook: boolean) =>
      defineAdapter({
        provider: 'example',
        operations: { 'orders.create': op({ resolvesIntent: declares }), 'orders.note': note },
        execute: async () => ({ kind: 'succeeded', result: null }),
        lookup: async () => ({ kind: 'not-found', reason: 'none' }),
        ...(hook && {
          resolveIntent: async (o: FrameOperation, intent: Record<string, unknown>) => {
            asked.push(o.name);
            return { ...intent, customer: 'resolved' };
          },
        }),
      });
    const adapter = define(true, true);
    expect(adapter.operations['orders.create']!.resolvesIntent).toBe(true);
    expect(Object.hasOwn(adapter.operations['orders.note']!, 'resolvesIntent')).toBe(false);
    expect(await adapter.doResolveIntent!('orders.create', { customer: 'c' })).toEqual({ customer: 'resolved' });
    expect(await adapter.doResolveIntent!('orders.note', { customer: 'c' })).toEqual({ customer: 'c' });
    expect(asked).toEqual(['orders.create']);
    expect(() => define(true, false)).toThrow(AdapterConfigurationError);
    expect(() => define(false, true)).toThrow(AdapterConfigurationError);
    // Core asks only `resolvesIntent === true`: any other value would be a resolver the runner never calls.
    const spelled = op({ resolvesIntent: 'yes' as unknown as boolean });
    expect(() =>
      defineAdapter({
        provider: 'example',
        operations: { 'orders.create': spelled },
        execute: async () => ({ kind: 'succeeded', result: null }),
        lookup: async () => ({ kind: 'not-found', reason: 'none' }),
        resolveIntent: async (_o: FrameOperation, intent: Record<string, unknown>) => intent,
      }),
    ).toThrow(/resolvesIntent must be true or false/);
  });

  it('operation names: exactly the declared keys; anything else (a provider prefix too) is UnknownOperationError from every method', async () => {
    const { adapter, calls } = framed();
    for (const bad of ['example.orders.create', 'nope']) {
      expect(() => adapter.deriveProviderKey(bad, id)).toThrow(UnknownOperationError);
      await expect(adapter.doExecute(bad, valid, ctx())).rejects.toThrow(UnknownOperationError);
      await expect(adapter.doLookup(bad, lctx())).rejects.toThrow(UnknownOperationError);
    }
    expect(calls).toHaveLength(0);
  });

  it('params the schema or checkParams refuse are rejected with the field errors, and the adapter is not called', async () => {
    const { adapter, calls } = framed({
      checkParams: (p) => ((p as { sku: string }).sku === 'banned' ? [{ path: 'sku', message: 'is banned' }] : []),
    });
    expect(await adapter.doExecute('orders.create', { ...valid, quantity: 0 }, ctx())).toMatchObject({
      kind: 'rejected',
      reason: 'validation',
      code: 'retrysafe_invalid_params',
      fields: [{ path: 'quantity' }],
    });
    expect(await adapter.doExecute('orders.create', { ...valid, sku: 'banned' }, ctx())).toMatchObject({
      kind: 'rejected',
      fields: [{ path: 'sku', message: 'is banned' }],
    });
    expect(calls).toHaveLength(0);
  });

  it('a typed input error the adapter throws while building the request is rejected too (never the runner’s "unknown")', async () => {
    const { adapter } = framed({}, async () => {
      throw new InvalidIntentError('sku', 'cannot be put in the path');
    });
    expect(await adapter.doExecute('orders.create', valid, ctx())).toMatchObject({
      kind: 'rejected',
      reason: 'validation',
      fields: [{ path: 'sku' }],
    });
  });

  it("the card's key comparison decides whether case may tell two ids apart, for every key the frame derives", async () => {
    const ids = [asBusinessOperationId('Order-1'), asBusinessOperationId('order-1')];
    const keys = async (card: RetrySafetyCard) => {
      const { adapter, calls } = framed({ card });
      for (const i of ids) await adapter.doExecute('orders.create', valid, ctx({ businessOperationId: i }));
      await adapter.doExecute('orders.create', valid, ctx({ businessOperationId: ids[0]!, keyRevision: 2 }));
      return [...ids.map((i) => adapter.deriveProviderKey('orders.create', i)), ...calls.map((c) => c.providerKey)];
    };
    const unknownCase = await keys(sampleCard as RetrySafetyCard);
    expect(unknownCase.slice(0, 2)).toEqual(unknownCase.slice(2, 4));
    expect(new Set(unknownCase.map((k) => k!.toLowerCase())).size).toBe(3);
    const providerKey = { ...sampleCard.providerKey, caseSensitive: fact(true, 'https://example.com/keys') };
    const sensitive = await keys({ ...sampleCard, providerKey } as RetrySafetyCard);
    expect(sensitive.slice(0, 2)).toEqual(['k-Order-1', 'k-order-1']);
  });

  it('the key: derived when none is recorded; a recorded key of the right shape is sent as recorded; another shape is refused unsent', async () => {
    const { adapter, calls } = framed();
    const derived = deriveProviderKey(id, RULE);
    expect(adapter.deriveProviderKey('orders.create', id)).toBe(derived);
    await adapter.doExecute('orders.create', valid, ctx());
    expect(calls[0]!.providerKey).toBe(derived);
    // An older release's rule (another prefix): not what today's rule derives, still accepted by the provider.
    const older = 'old-order-1' as ProviderKey;
    await adapter.doExecute('orders.create', valid, ctx({ providerKey: older }));
    expect(calls[1]!.providerKey).toBe(older);
    for (const bad of ['x'.repeat(41), 'has space', '']) {
      expect(await adapter.doExecute('orders.create', valid, ctx({ providerKey: bad as ProviderKey }))).toMatchObject({
        kind: 'rejected',
        code: 'retrysafe_provider_key_shape',
      });
      expect(await adapter.doLookup('orders.create', lctx({ providerKey: bad as ProviderKey }))).toMatchObject({
        kind: 'cannot-tell',
        code: 'retrysafe_provider_key_shape',
      });
    }
    expect(calls).toHaveLength(2);
    expect(providerKeyShapeProblem('ok-key', RULE)).toBeNull();
  });

  it('abort: before sending ⇒ not-applied and the adapter is not called; mid-call ⇒ unknown at once, whatever the adapter does', async () => {
    let release!: () => void;
    const { adapter, calls } = framed(
      {},
      () => new Promise<Outcome>((r) => (release = () => r({ kind: 'succeeded', result: 1 }))),
    );
    expect(await adapter.doExecute('orders.create', valid, ctx({ signal: AbortSignal.abort() }))).toMatchObject({
      kind: 'not-applied',
      code: 'ABORTED_BEFORE_SEND',
      neverSent: true,
    });
    expect(calls).toHaveLength(0);
    const controller = new AbortController();
    const pending = adapter.doExecute('orders.create', valid, ctx({ signal: controller.signal }));
    await new Promise((r) => setImmediate(r));
    expect(calls[0]!.signal).toBe(controller.signal);
    controller.abort();
    expect(await pending).toMatchObject({ kind: 'unknown', code: 'ABORTED' });
    release();
    // Without a signal the adapter still gets one (never aborting) to pass on.
    const free = adapter.doExecute('orders.create', valid, ctx());
    await new Promise((r) => setImmediate(r));
    expect(calls[1]!.signal.aborted).toBe(false);
    release();
    expect(await free).toMatchObject({ kind: 'succeeded' });
  });

  it("lookup: the frame fills the caller's key judgement and clock-skew margin, from the card rule with the caller's margin", async () => {
    const seen: FramedLookupContext[] = [];
    const adapter = defineAdapter({
      provider: 'example',
      operations: { 'orders.create': op() },
      execute: async () => ({ kind: 'succeeded', result: 1 }),
      lookup: async (_o, c) => (seen.push(c), { kind: 'not-found', reason: 'none' }),
    });
    const hour = 3_600_000;
    // 23 h after the first dispatch: inside the 24 h retention with the card's 1 min margin, past it with 1 h.
    await adapter.doLookup('orders.create', lctx({ firstDispatchedAt: 0, now: 23 * hour, clockSkewMarginMs: hour }));
    await adapter.doLookup('orders.create', lctx({ firstDispatchedAt: 0, now: 23 * hour }));
    await adapter.doLookup('orders.create', lctx({ firstDispatchedAt: 0, now: 23 * hour, keyReusable: false }));
    expect(seen.map((c) => [c.keyReusable, c.clockSkewMarginMs])).toEqual([
      [false, hour],
      [true, 60_000],
      [false, 60_000],
    ]);
    // A margin that cannot work is refused, never judged with: NaN would make a key past its retention look reusable.
    for (const clockSkewMarginMs of [Number.NaN, -hour])
      await expect(
        adapter.doLookup('orders.create', lctx({ firstDispatchedAt: 0, now: 25 * hour, clockSkewMarginMs })),
      ).rejects.toThrow(/policy\.clockSkewMarginMs: expected a finite number ≥ 0/);
    expect(seen).toHaveLength(3);
  });

  it('lookup.method none is refused by the frame', async () => {
    const card = { ...sampleCard, lookup: { ...sampleCard.lookup, method: fact('none', 'x') } } as RetrySafetyCard;
    const { adapter } = framed({ card });
    await expect(adapter.doLookup('orders.create', lctx())).rejects.toThrow(UnsupportedCapabilityError);
  });

  it('a card that does not know whether a key travels (unknown) is built without a key rule, and sends none', async () => {
    const unknownTravel = {
      ...sampleCard,
      providerKey: { ...sampleCard.providerKey, travels: fact('unknown', 'x') },
      unverified: [...sampleCard.unverified, { field: 'providerKey.travels', condition: 'x', source: 'x' }],
    } as unknown as RetrySafetyCard;
    const { adapter, calls } = framed({ card: unknownTravel, keyRule: null });
    expect(adapter.deriveProviderKey('orders.create', id)).toBeNull();
    await adapter.doExecute('orders.create', valid, ctx());
    expect(calls[0]!.providerKey).toBeNull();
    // and never with one: a key cannot be sent where the card does not know it travels
    expect(() => framed({ card: unknownTravel })).toThrow(/travels is unknown/);
  });

  it.each([
    [
      'a card for another operation',
      { card: { ...sampleCard, operation: 'example.other' } as RetrySafetyCard },
      /expected "example.orders.create"/,
    ],
    [
      'a key rule the card does not declare',
      {
        card: {
          ...sampleCard,
          providerKey: { ...sampleCard.providerKey, travels: fact('none', 'x') },
        } as RetrySafetyCard,
      },
      /no key travels/,
    ],
    ['no key rule for a card whose key travels', { keyRule: null }, /declares no key rule/],
    ['a key longer than the card allows', { keyRule: { ...RULE, maxLength: 300 } }, /allows 300/],
    [
      'a key character the card does not allow',
      { keyRule: { ...RULE, charset: 'A-Za-z0-9_:./-' } },
      /allows "\/", outside the card's charset/,
    ],
  ] as const)('refuses %s (AdapterConfigurationError at construction)', (_what, over, message) => {
    expect(() => framed(over as Partial<FrameOperation>)).toThrow(AdapterConfigurationError);
    expect(() => framed(over as Partial<FrameOperation>)).toThrow(message);
  });
});
