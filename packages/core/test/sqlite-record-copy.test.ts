// The SQLite ledger keeps a private copy of each open record it stores (docs/decisions/2026-12-01-sqlite-known-rows.md).
// Records of the transitions' shape are copied as one object literal (docs/decisions/2026-12-02-sqlite-lone-statements.md,
// seventh round); every record must get the copy the generic walk gives: the same JSON text, no object shared with the
// original, and null whenever the body would not read back as the same value.
import { describe, expect, it } from 'vitest';
import { asBusinessOperationId, type OperationRecord, type ProviderKey } from '@retrysafe/contract';
import { claimTransition, setStateTransition } from '@retrysafe/contract/ledger';
import { jsonCopy } from '../src/ledger/sqlite-ledger.js';

const claimed = (params: Record<string, unknown> = { orderRef: 'w0-1', amount: 1, nested: { list: [1, 'x', null] } }): OperationRecord =>
  claimTransition(null, {
    businessOperationId: asBusinessOperationId('op-1'),
    provider: 'p',
    operation: 'p.op',
    intentFingerprint: 'sha256:i',
    paramsFingerprint: 'sha256:f',
    params: params as never,
    providerKey: 'k' as ProviderKey,
    owner: 'w',
    leaseMs: 1000,
    now: 1,
    dispatch: true,
  }).write!;

/** Every object reachable from v. */
function objects(v: unknown, out = new Set<object>()): Set<object> {
  if (typeof v === 'object' && v !== null) {
    out.add(v);
    for (const x of Object.values(v)) objects(x, out);
  }
  return out;
}

describe('jsonCopy (the known record)', () => {
  it('a record as the transitions write it: an equal copy with the same key order, sharing no object', () => {
    for (const r of [claimed(), setStateTransition(claimed(), { state: 'succeeded', now: 2, lastOutcome: 'succeeded', result: { id: 'x' }, providerRef: 'x' })]) {
      const c = jsonCopy(r)!;
      expect(JSON.stringify(c)).toBe(JSON.stringify(r));
      expect(Object.keys(c)).toEqual(Object.keys(r));
      const mine = objects(c);
      for (const o of objects(r)) expect(mine.has(o)).toBe(false);
    }
  });

  it('anything the body would not read back as the same value is not kept, in the record or its params', () => {
    const r = claimed();
    const cases: Array<[string, OperationRecord]> = [
      ['undefined value', { ...r, statusRef: undefined } as unknown as OperationRecord],
      ['NaN', { ...r, fence: Number.NaN }],
      ['-0', { ...r, attemptCount: -0 }],
      ['a Date in params', claimed({ at: new Date(0) })],
      ['toJSON on the record', Object.assign({ ...r }, { toJSON: () => 'x' }) as unknown as OperationRecord],
      ['a class instance', Object.assign(Object.create({ inherited: 1 }), r) as OperationRecord],
    ];
    for (const [name, rec] of cases) expect(jsonCopy(rec), name).toBeNull();
  });

  it('a record of another shape (extra, missing or reordered keys) is copied by the generic walk: equal, own keys only', () => {
    const r = claimed();
    const { fence, ...rest } = r;
    for (const rec of [{ ...r, extra: 'e' }, rest, { fence, ...rest }] as unknown as OperationRecord[]) {
      const c = jsonCopy(rec)!;
      expect(JSON.stringify(c)).toBe(JSON.stringify(rec));
      expect(c).not.toBe(rec);
    }
    const proto = Object.prototype as Record<string, unknown>;
    proto.polluted = 'x';
    try {
      const c = jsonCopy(r)!;
      expect(Object.keys(c)).toEqual(Object.keys(r));
      expect(JSON.stringify(c)).toBe(JSON.stringify(r));
    } finally {
      delete proto.polluted;
    }
  });

  it('an accessor is read once, and what it answered is what the copy holds', () => {
    let reads = 0;
    const r = claimed();
    const rec = { ...r };
    Object.defineProperty(rec, 'providerRef', { enumerable: true, get: () => `read-${++reads}` });
    const c = jsonCopy(rec as OperationRecord)!;
    expect(reads).toBe(1);
    expect(c.providerRef).toBe('read-1');
    expect(Object.getOwnPropertyDescriptor(c, 'providerRef')).toMatchObject({ value: 'read-1', writable: true });
  });
});
