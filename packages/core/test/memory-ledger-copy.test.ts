// The memory ledger's copy (issue 23): structuredClone's answer for every value, without its round
// trip for plain data, and still a copy nobody else holds (a caller mutating what it got or gave
// never changes the ledger).
import { createMemoryLedger } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { clone } from '../src/ledger/memory-ledger.js';

const nullProto = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 });
const withProtoKey = JSON.parse('{"__proto__": {"x": 1}, "b": 2}') as unknown;
const withPrimitiveProtoKey = JSON.parse('{"a": {"__proto__": 5}, "b": 2}') as unknown;
const withSymbolKey = { a: 1, [Symbol('s')]: 2, nested: { [Symbol('t')]: 3, b: 4 } };
const shared = { s: 1 };
const cyclic: Record<string, unknown> = { name: 'c' };
cyclic.self = cyclic;
const sparse = [1, , 3];
const extra = Object.assign([1, 2], { note: 'x' });
const holeAndExtra = Object.assign([1, , 3], { note: 'x' });
class Point {
  constructor(readonly x: number) {}
}
const withGetter = {
  get g() {
    return { deep: true };
  },
  plain: 'p',
};

const values: Record<string, unknown> = {
  record: {
    businessOperationId: 'orders.create:abc',
    fence: 2,
    params: { orderRef: 'o-1', amount: 1, lines: [{ sku: 'a', qty: 2 }], note: null, flag: false },
    result: null,
    receiptChain: { head: 'h', length: 1 },
    big: 10n,
    neg: -0,
    nan: Number.NaN,
  },
  'null-prototype object': { inner: nullProto },
  'own __proto__ key': withProtoKey,
  'own __proto__ key holding a number': withPrimitiveProtoKey,
  'symbol keys (left out)': withSymbolKey,
  'shared reference': { a: shared, b: shared },
  cycle: cyclic,
  'sparse array': { list: sparse },
  'array with an extra key': { list: extra },
  'array with a hole and an extra key': { list: holeAndExtra },
  Date: { at: new Date(1_700_000_000_000) },
  Map: { m: new Map([['k', 1]]) },
  'class instance': { p: new Point(3) },
  getter: withGetter,
  'undefined member': { u: undefined, list: [undefined, 1] },
  'integer-like keys': { b: 1, 2: 'two', a: 3, 1: 'one' },
  'top-level array': [1, 'two', { three: 3 }],
};

describe('memory ledger copy', () => {
  for (const [name, v] of Object.entries(values)) {
    it(`gives what structuredClone gives: ${name}`, () => {
      const c = clone(v);
      const s = structuredClone(v);
      expect(c).toStrictEqual(s);
      expect(c).not.toBe(v);
      // Same own keys in the same order, same prototype, same sharing.
      expect(JSON.stringify(Object.keys(c as object))).toBe(JSON.stringify(Object.keys(s as object)));
      expect(Object.getPrototypeOf(c)).toBe(Object.getPrototypeOf(s));
    });
  }

  it('copies an operation record (the literal for its usual key order) as structuredClone does', async () => {
    const ledger = createMemoryLedger();
    const claim = await ledger.claim({
      businessOperationId: 'op:r' as never,
      provider: 'p',
      operation: 'orders.create',
      intentFingerprint: 'sha256:i',
      paramsFingerprint: 'sha256:p',
      params: { a: [1, { b: 'x' }] },
      providerKey: null,
      owner: 'w',
      leaseMs: 30_000,
      now: 1_000,
      dispatch: true,
    });
    const done = await ledger.setState(
      { businessOperationId: 'op:r' as never, fence: claim.record.fence },
      { state: 'succeeded', result: { id: 'r1', nested: { n: 1 } }, providerRef: 'r1', now: 2_000 },
    );
    for (const r of [claim.record, done]) {
      const c = clone(r);
      expect(c).toStrictEqual(structuredClone(r));
      expect(Object.keys(c)).toEqual(Object.keys(r));
      expect(c.params).not.toBe(r.params);
    }
    // The same keys in another order, one key more, or a value structuredClone refuses: the general copy's answer.
    const reordered = Object.fromEntries(Object.entries(done).reverse());
    expect(Object.keys(clone(reordered))).toEqual(Object.keys(reordered));
    const extra = { ...done, extra: { e: 1 } };
    expect(clone(extra)).toStrictEqual(structuredClone(extra));
    const shared = { ...done, result: done.params };
    const sc = clone(shared);
    expect(sc.result).toBe(sc.params);
    expect(() => clone({ ...done, result: () => 1 })).toThrow(/could not be cloned/);
  });

  it('keeps a shared reference shared and a cycle a cycle, as structuredClone does', () => {
    const c = clone({ a: shared, b: shared });
    expect(c.a).toBe(c.b);
    expect(c.a).not.toBe(shared);
    const k = clone(cyclic);
    expect(k.self).toBe(k);
  });

  it('keeps an own __proto__ key a data key (the prototype stays Object.prototype)', () => {
    const c = clone(withProtoKey) as Record<string, unknown>;
    expect(Object.getPrototypeOf(c)).toBe(Object.prototype);
    expect(Object.keys(c)).toEqual(['__proto__', 'b']);
  });

  it('copies own keys only, also when Object.prototype has gained an enumerable key', () => {
    (Object.prototype as Record<string, unknown>).polluted = { deep: 1 };
    try {
      const c = clone({ a: { b: 1 } });
      expect(Object.keys(c)).toEqual(['a']);
      expect(Object.keys(c.a)).toEqual(['b']);
    } finally {
      delete (Object.prototype as Record<string, unknown>).polluted;
    }
  });

  it('keeps holes and extra array keys', () => {
    const c = clone({ list: holeAndExtra }).list;
    expect(1 in c).toBe(false);
    expect((c as unknown as { note: string }).note).toBe('x');
  });

  it('refuses what structuredClone refuses, with its error', () => {
    for (const bad of [{ f: () => 1 }, { s: Symbol('x') }, [() => 1], () => 1]) {
      let expected: unknown;
      try {
        structuredClone(bad);
      } catch (err) {
        expected = err;
      }
      expect(expected).toBeInstanceOf(Error);
      expect(() => clone(bad)).toThrow((expected as Error).message);
    }
  });

  it('a caller mutating what it gave or got never changes the ledger', async () => {
    const ledger = createMemoryLedger();
    const params = { orderRef: 'o-1', lines: [{ sku: 'a' }] };
    const claim = await ledger.claim({
      businessOperationId: 'op:1' as never,
      provider: 'p',
      operation: 'orders.create',
      intentFingerprint: 'sha256:i',
      paramsFingerprint: 'sha256:p',
      params,
      providerKey: null,
      owner: 'w',
      leaseMs: 30_000,
      now: 1_000,
    });
    params.lines[0]!.sku = 'changed-after-claim';
    (claim.record.params as typeof params).lines[0]!.sku = 'changed-in-answer';
    (claim.record as { state: string }).state = 'succeeded';
    const stored = await ledger.get('op:1' as never);
    expect(stored?.state).toBe('claimed');
    expect((stored?.params as typeof params).lines[0]!.sku).toBe('a');
    (stored!.params as typeof params).lines.push({ sku: 'pushed' });
    expect(((await ledger.get('op:1' as never))?.params as typeof params).lines).toEqual([{ sku: 'a' }]);
  });
});
