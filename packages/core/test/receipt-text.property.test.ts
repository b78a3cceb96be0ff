// The receipt writer (src/receipt-text.ts) writes what receiptHash hashes: for ANY body — a runner's
// receipt, one read back from a ledger, an edited one — its text must be `prefix + canonicalJson(body)`
// byte for byte (or canonicalJson's error), or existing chains stop verifying.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '@retrysafe/contract';
import { receiptHash } from '@retrysafe/core';
import { RECEIPT_KEYS, receiptText } from '../src/receipt-text.js';

/** What canonicalJson answers: its text, or its error's name and message. */
function outcome(f: () => string): string {
  try {
    return f();
  } catch (err) {
    return `threw ${(err as Error).name}: ${(err as Error).message}`;
  }
}

const odd = fc.constantFrom('"', '\\', '\n', '\u0000', '\u007f', '\u00e9', 'e\u0301', '\u212b', '\u2028', '\ud800', '\udc00', '\ud83d\ude00', '\uffff');
const plainText = fc.string({ unit: fc.constantFrom(...'abcdefxyz0123456789-_:.TZ '), maxLength: 72, size: 'max' });
const text = fc.oneof(
  plainText,
  fc.tuple(plainText, odd, plainText).map(([a, b, c]) => a + b + c),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme-composite', maxLength: 20 }),
  fc.constantFrom('', 'noop', 'dispatch', 'succeeded', '2026-12-02T08:58:55.131Z', 'sha256:' + 'ab'.repeat(32)),
);
const num = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(-0, 0, 1, 1e21, 1e-7, 0.5, 250, NaN, Infinity, -Infinity));
const scalar = fc.oneof(text, num, fc.constant(null));
/** Values a tampered receipt can hold: scalars mostly, and anything JSON (or not) can. */
const anyValue = fc.oneof(
  { weight: 6, arbitrary: scalar },
  { weight: 1, arbitrary: fc.constantFrom(undefined, true, false, 10n, () => 1, Symbol('s'), new Date(0), new Date(NaN), [], {}) },
  { weight: 1, arbitrary: fc.array(scalar, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 4 }), scalar, { maxKeys: 3 }) },
);
const fieldErrors = fc.array(fc.record({ path: text, message: text }, { requiredKeys: [] }), { maxLength: 3 });

/** An object with these members in this order, each an own enumerable data property (so `__proto__` is a key, not the prototype). */
function objectOf(entries: readonly (readonly [string, unknown])[], nullProto: boolean): Record<string, unknown> {
  const o: Record<string, unknown> = nullProto ? Object.create(null) : {};
  for (const [k, v] of entries) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  return o;
}

const extraKey = fc.oneof(fc.constantFrom('__proto__', 'hash', 'fields', 'extra', 'Seq', 'decision2', 'toString', 'constructor', ''), fc.string({ maxLength: 6 }));
const decision = fc.oneof(
  { weight: 6, arbitrary: fc
    .tuple(
      fc.record({ action: fc.oneof(text, anyValue), reason: fc.oneof(text, anyValue), delayMs: num }, { requiredKeys: [] }),
      fc.array(fc.tuple(extraKey, anyValue), { maxLength: 1 }),
      fc.boolean(),
      fc.boolean(),
    )
    .map(([known, extra, reverse, nullProto]) => {
      const entries = [...Object.entries(known), ...extra];
      return objectOf(reverse ? entries.reverse() : entries, nullProto && extra.length > 0);
    }) },
  { weight: 1, arbitrary: anyValue },
);

/** A receipt-like body: any subset of the receipt's members (typed as a runner writes them, or anything), extra members, any order. */
const body = fc
  .tuple(
    fc.record(
      {
        businessOperationId: text, seq: num, runId: text, attemptId: text, provider: text, operation: text, kind: text,
        startedAt: text, finishedAt: text, outcome: fc.oneof(text, fc.constant(null)), decision, providerKey: fc.oneof(text, fc.constant(null)),
        requestFingerprint: text, prevHash: fc.oneof(text, fc.constant(null)), status: num, code: text, providerRef: text,
        requestId: text, message: text, rejectReason: text, fields: fieldErrors,
      },
      { requiredKeys: [] },
    ),
    fc.dictionary(fc.constantFrom(...RECEIPT_KEYS, 'fields'), anyValue, { maxKeys: 2 }),
    fc.array(fc.tuple(extraKey, anyValue), { maxLength: 2 }),
    fc.boolean(),
    fc.nat(),
    fc.constantFrom(false, false, false, true),
  )
  .map(([typed, retyped, extra, withExtra, rotate, nullProto]) => {
    const entries: [string, unknown][] = [...Object.entries({ ...typed, ...retyped }), ...(withExtra ? extra : [])];
    const r = entries.length ? rotate % entries.length : 0;
    return objectOf([...entries.slice(r), ...entries.slice(0, r)], nullProto);
  });
const prefix = fc.oneof(fc.constant(''), fc.constant('0f'.repeat(32)), text);

describe('receiptText', () => {
  it('is prefix + canonicalJson(body) for any receipt-like body (or canonicalJson’s error)', () => {
    fc.assert(
      fc.property(prefix, body, (p, b) => {
        expect(outcome(() => receiptText(p, b))).toBe(outcome(() => p + canonicalJson(b)));
      }),
      { numRuns: 5000 },
    );
  });

  it('writes the runner’s shapes itself, and they are canonicalJson’s text', () => {
    const clean = {
      businessOperationId: 'noop.orders.create:e9098d2c6d947d3091f15f162b8e2681', seq: 1, runId: 'run_cdaf531f-7032-4bec-9fa1-5ef3b365594a',
      attemptId: 'att_ea459470-0065-4ca5-8e46-bb4d9497e8e7', provider: 'noop', operation: 'noop.orders.create', kind: 'dispatch',
      startedAt: '2026-12-02T08:58:55.131Z', finishedAt: '2026-12-02T08:58:55.133Z', outcome: 'succeeded',
      decision: { action: 'complete', reason: 'the provider performed it' }, providerKey: 'noop.orders.create:e9098d2c6d947d3091f15f162b8e2681',
      requestFingerprint: 'sha256:dc29f1ed7ba1b719b5db7c962d51f51121a2e91c44f8b34a865c5ff586583364', prevHash: null, providerRef: 'ord_w0-5',
    };
    const retry = { ...clean, seq: 2, prevHash: 'ab'.repeat(32), outcome: 'not-applied', decision: { action: 'retry', reason: 'r\u00e9essayer "bient\u00f4t"', delayMs: 250.5 }, status: 429, code: 'rate_limited', message: 'e\u0301\n\ud800', rejectReason: 'conflict' };
    for (const b of [clean, retry, { ...retry, providerKey: null, outcome: null, decision: { reason: "no action", action: "handoff" } }, {}] as { prevHash?: string | null }[]) {
      expect(receiptText(b.prevHash ?? '', b)).toBe((b.prevHash ?? '') + canonicalJson(b));
    }
    // Pinned: the hash of the clean receipt as every earlier release wrote it (sha256 of canonicalJson).
    expect(receiptHash(clean as never)).toBe(createHash('sha256').update(canonicalJson(clean)).digest('hex'));
    expect(receiptHash(clean as never)).toBe('de23d85a47849c40cef4aebb78c0d2fa0e363a41eed5d0f89377700400f0b56a');
  });

  it('lists the receipt’s members in canonicalJson’s order', () => {
    expect([...RECEIPT_KEYS]).toEqual([...RECEIPT_KEYS].sort());
  });

  it('is canonicalJson’s answer while Object.prototype carries an enumerable key, or a non-enumerable receipt member', () => {
    const b = { attemptId: 'att_1', seq: 1, decision: { action: 'complete', reason: 'done' }, prevHash: null };
    const proto = Object.prototype as Record<string, unknown>;
    // Without a decision too: the decision's own for-in would meet the inherited key and hand over anyway.
    const { decision: _d, ...noDecision } = b;
    for (const key of ['polluted', 'code']) {
      try {
        proto[key] = 'inherited';
        for (const x of [b, noDecision]) {
          expect(receiptText('', x)).toBe(canonicalJson(x));
          expect(receiptText('', x)).not.toContain('inherited');
        }
      } finally {
        delete proto[key];
      }
    }
    try {
      Object.defineProperty(Object.prototype, 'code', { value: 'inherited', enumerable: false, configurable: true, writable: true });
      expect(receiptText('', b)).toBe(canonicalJson(b));
      expect(receiptText('', b)).not.toContain('inherited');
    } finally {
      delete proto.code;
    }
  });
});
