import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fingerprint, sha256Hex } from './canonical.js';
import { intentIdentity } from './entry-rules.js';
import {
  asBusinessOperationId,
  businessOperationId,
  deriveProviderKey,
  InvalidIdError,
  InvalidIntentError,
  newAttemptId,
  newRunId,
  type ProviderKeyRule,
  pickIntent,
  revisionKeySource,
} from './index.js';

/** Rebuilds a JSON value with every object's keys in a shuffled order. */
function shuffleKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((v, i) => shuffleKeys(v, seed + i));
  if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    const shuffled = entries
      .map((e, i) => [((i + 1) * 2654435761 * (seed + 7)) % 1009, e] as const)
      .sort((a, b) => a[0] - b[0])
      .map(([, e]) => e);
    return Object.fromEntries(shuffled.map(([k, v]) => [k, shuffleKeys(v, seed + 1)]));
  }
  return value;
}

// JSON intents with finite numbers and no -0 (canonical form folds -0 to 0 by design)
const intentArb = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 8 }).filter((k) => k !== '__proto__'),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown),
  { minKeys: 1, maxKeys: 6 },
);

describe('businessOperationId', () => {
  it('is readable: operation name then a 32-hex digest', () => {
    const id = businessOperationId('stripe.paymentIntents.create', {
      customer: 'cus_1',
      amount: 1000,
      currency: 'eur',
    });
    expect(id).toMatch(/^stripe\.paymentIntents\.create:[0-9a-f]{32}$/);
  });

  it('does not change when keys are re-ordered (property)', () => {
    fc.assert(
      fc.property(intentArb, fc.nat(1000), (intent, seed) => {
        const reordered = shuffleKeys(intent, seed) as Record<string, unknown>;
        expect(businessOperationId('op.create', reordered)).toBe(businessOperationId('op.create', intent));
      }),
    );
  });

  it('does not change when numbers or whitespace are re-formatted (property)', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom('', ' ', '\n  '), (n, ws) => {
        const a = { amount: n };
        // the same number written differently in JSON text: exponent form, trailing zeros, whitespace
        const text = `{${ws}"amount"${ws}:${ws}${n.toExponential()}${ws}}`;
        const b = JSON.parse(text) as Record<string, unknown>;
        expect(businessOperationId('op.create', b)).toBe(
          businessOperationId('op.create', Object.is(n, -0) ? { amount: 0 } : a),
        );
      }),
    );
    expect(businessOperationId('op.create', JSON.parse('{"amount": 1000.0}'))).toBe(
      businessOperationId('op.create', JSON.parse('{"amount":1e3}')),
    );
  });

  it('changes when any intent value changes (property)', () => {
    fc.assert(
      fc.property(intentArb, fc.nat(), (intent, pick) => {
        const keys = Object.keys(intent);
        const key = keys[pick % keys.length]!;
        const changed = { ...intent, [key]: { changed: intent[key] ?? null } };
        expect(businessOperationId('op.create', changed)).not.toBe(businessOperationId('op.create', intent));
      }),
    );
  });

  it('changes with the operation name', () => {
    expect(businessOperationId('a.create', { x: 1 })).not.toBe(businessOperationId('b.create', { x: 1 }));
  });

  it('refuses intents that cannot be canonicalised, with the path', () => {
    expect(() => businessOperationId('op.create', { a: { b: Number.NaN } })).toThrow(InvalidIntentError);
    expect(() => businessOperationId('op.create', { a: { b: Number.NaN } })).toThrow(/a\.b/);
    expect(() => businessOperationId('op.create', { f: () => 1 })).toThrow(InvalidIntentError);
    expect(() => businessOperationId('op.create', { m: new Map() })).toThrow(/Map/);
    expect(() => businessOperationId('op.create', {})).toThrow(/empty/);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => businessOperationId('op.create', cyclic)).toThrow(/cycle/);
    expect(() => businessOperationId('not a name', { a: 1 })).toThrow(InvalidIdError);
  });

  it('intentIdentity gives the same id and the fingerprint of the same intent, from one digest', () => {
    fc.assert(
      fc.property(intentArb, (intent) => {
        const { id, intentFingerprint } = intentIdentity('op.create', intent);
        expect(id).toBe(businessOperationId('op.create', intent));
        expect(intentFingerprint).toBe(fingerprint({ operation: 'op.create', intent }));
        expect(intentFingerprint.slice('sha256:'.length, 'sha256:'.length + 32)).toBe(id.slice('op.create:'.length));
      }),
    );
  });

  it('an account is digested with the intent: another account, another id; none, the id as without accounts', () => {
    fc.assert(
      fc.property(intentArb, (intent) => {
        const none = intentIdentity('op.create', intent, undefined);
        expect(none).toEqual(intentIdentity('op.create', intent));
        const a = intentIdentity('op.create', intent, 'a');
        expect(a.id).not.toBe(none.id);
        expect(a.id).not.toBe(intentIdentity('op.create', intent, 'b').id);
        expect(a.intentFingerprint).toBe(fingerprint({ operation: 'op.create', intent, account: 'a' }));
      }),
    );
  });
});

describe('caller-supplied ids', () => {
  it('accepts readable ids and rejects malformed ones with a typed error', () => {
    expect(asBusinessOperationId('order-A-17/charge:1')).toBe('order-A-17/charge:1');
    for (const bad of ['', ' lead', 'has space', 'x'.repeat(201), 'ünïcode', '-leading']) {
      expect(() => asBusinessOperationId(bad)).toThrow(InvalidIdError);
    }
  });

  it('makes run and attempt ids new every time', () => {
    expect(newRunId()).not.toBe(newRunId());
    expect(newAttemptId()).toMatch(/^att_/);
  });
});

describe('pickIntent', () => {
  it('picks declared fields by dot path and refuses missing ones', () => {
    expect(pickIntent({ a: 1, b: { c: 2 }, d: 3 }, ['a', 'b.c'])).toEqual({ a: 1, 'b.c': 2 });
    expect(() => pickIntent({ a: 1 }, ['a', 'b'])).toThrow(InvalidIntentError);
  });
  it('leaves an optional field out when the call does (or gives undefined); any value given is another intent', () => {
    const id = (params: object) => businessOperationId('a.b', pickIntent(params, ['a', 'by'], ['by']));
    expect(pickIntent({ a: 1, by: undefined }, ['a', 'by'], ['by'])).toEqual({ a: 1 });
    expect(id({ a: 1 })).toBe(businessOperationId('a.b', { a: 1 }));
    const ids = [{ a: 1 }, { a: 1, by: 'email' }, { a: 1, by: '' }, { a: 1, by: null }].map(id);
    expect(new Set(ids).size).toBe(4);
    expect(() => pickIntent({ by: 'email' }, ['a', 'by'], ['by'])).toThrow(InvalidIntentError);
  });
  it('reads an optional path beneath an object the same way; one that meets an array is required of every item', () => {
    const pick = (params: object) => pickIntent(params, ['a', 'task.due'], ['task.due']);
    expect(pick({ a: 1, task: { title: 't' } })).toEqual({ a: 1 });
    expect(pick({ a: 1, task: { due: undefined } })).toEqual({ a: 1 });
    expect(pick({ a: 1 })).toEqual({ a: 1 });
    expect(pick({ a: 1, task: { due: null } })).toEqual({ a: 1, 'task.due': null });
    // Left out of one item only would make [x, none] and [none, x] one intent.
    expect(() => pick({ a: 1, task: [{ due: 'x' }, {}] })).toThrow(InvalidIntentError);
  });
});

describe('deriveProviderKey', () => {
  const id = businessOperationId('stripe.paymentIntents.create', { order: 'A-17' });
  it('is deterministic and readable when the id fits (a provider known to tell case apart)', () => {
    const rule = { maxLength: 255, charset: 'A-Za-z0-9._:/-', prefix: 'rs-', caseSensitive: true };
    expect(deriveProviderKey(id, rule)).toBe(`rs-${id}`);
    expect(deriveProviderKey(id, rule)).toBe(deriveProviderKey(id, rule));
  });
  it('hashes to fit length and charset (property: always within the rule)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 20, max: 300 }), (maxLength) => {
        const key = deriveProviderKey(id, { maxLength, charset: 'a-z0-9-', prefix: 'k-' });
        expect(key.length).toBeLessThanOrEqual(maxLength);
        expect(key).toMatch(/^[a-z0-9-]+$/);
      }),
    );
  });
  it('refuses a rule that cannot carry a safe key', () => {
    expect(() => deriveProviderKey(id, { maxLength: 10, charset: 'a-z0-9' })).toThrow(InvalidIdError);
  });
});

describe('deriveProviderKey is injective: two ids (or revisions) never share a key', () => {
  // Every key rule an adapter declares, with the shortest room a rule may leave.
  const rules = [
    { maxLength: 255, charset: 'A-Za-z0-9._:/-', prefix: 'rs-' },
    { maxLength: 256, charset: 'A-Za-z0-9._:/-', prefix: 'rs-email-' },
    { maxLength: 100, charset: 'a-z0-9._:/-' },
    { maxLength: 64, charset: 'A-Za-z0-9-', prefix: 'rs-' },
    { maxLength: 64, charset: 'A-Za-z0-9_-', prefix: 'rs-' },
    { maxLength: 19, charset: 'a-z0-9-', prefix: 'k-' },
  ];
  const idArb = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/);
  const sourceArb = fc
    .tuple(idArb, fc.integer({ min: 1, max: 12 }))
    .map(([id, r]) => revisionKeySource(id as never, r));
  const digestOf = (source: string, rule: (typeof rules)[number]) =>
    sha256Hex(source).slice(0, Math.min(rule.maxLength - (rule.prefix ?? '').length, 64));

  it('an id spelt as the digest of another id (or revision) gets a key of its own', () => {
    for (const rule of rules) {
      const revised = revisionKeySource(asBusinessOperationId('order-1'), 2);
      const lookalike = asBusinessOperationId(digestOf(revised, rule));
      expect(deriveProviderKey(lookalike, rule)).not.toBe(deriveProviderKey(revised, rule));
    }
  });

  it('ids that differ only in case: readable keys only where the provider is known to tell case apart', () => {
    const rule = rules[0]!;
    const [upper, lower] = [asBusinessOperationId('Order-1'), asBusinessOperationId('order-1')];
    expect(deriveProviderKey(lower, rule)).toBe('rs-order-1');
    expect(deriveProviderKey(upper, rule)).toMatch(/^rs-[0-9a-f]{64}$/);
    expect(deriveProviderKey(upper, { ...rule, caseSensitive: true })).toBe('rs-Order-1');
  });

  it('distinct sources give distinct keys, near-collisions included (property)', () => {
    // b is a's near neighbour: case flipped, a character appended, the digest of a, or a long common prefix.
    const neighbour = fc.oneof(
      sourceArb.map((a) => [a, a.toUpperCase()] as const),
      sourceArb.map((a) => [a, a.toLowerCase()] as const),
      sourceArb.map((a) => [a, `${a}0`] as const),
      fc.tuple(sourceArb, fc.nat(5)).map(([a, i]) => [a, digestOf(a, rules[i]!)] as const),
      fc
        .tuple(idArb, idArb)
        .map(([p, s]) => [`${p}${'x'.repeat(200)}`.slice(0, 200), `${p}${'x'.repeat(199)}${s}`.slice(0, 200)] as const),
      fc.tuple(sourceArb, sourceArb),
    );
    fc.assert(
      fc.property(neighbour, fc.nat(5), ([a, b], i) => {
        fc.pre(a !== b);
        const rule = rules[i]!;
        // A rule that does not know the provider tells case apart: keys differ even to a provider that folds case.
        const folded = (r: ProviderKeyRule) => deriveProviderKey(a as never, r).toLowerCase();
        expect(folded(rule)).not.toBe(deriveProviderKey(b as never, rule).toLowerCase());
        const exact = { ...rule, caseSensitive: true };
        expect(deriveProviderKey(a as never, exact)).not.toBe(deriveProviderKey(b as never, exact));
      }),
      { numRuns: 500 },
    );
  });
});
