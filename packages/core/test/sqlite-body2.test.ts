// Body format 2 of the SQLite ledger (issue 23): what it writes reads back as the JSON text
// JSON.stringify writes for the same values (receipts keep their bytes and their hash chain), appending
// after stored receipts gives the bytes a full encode gives, and a cut or corrupt body is refused.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BodyFormatError, decodeBody2, encodeBody2, resealBody2 } from '../src/ledger/sqlite-body2.js';
import { decodeBody, encodeBody } from '../src/ledger/sqlite-layout.js';
import { fuzzBodyDecoder } from './body-fuzz.js';

const text = (v: unknown) => JSON.stringify(v);
/** Encodes and decodes; returns the JSON text of what was read. */
function roundTrip(record: unknown, receipts: unknown[] = []): { record: string; receipts: string[] } {
  const d = decodeBody2(encodeBody2(record, receipts));
  return { record: text(d.record), receipts: d.receipts.map(text) };
}

const hex = (n: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n });
const anyUnit = fc.nat(0xffff).map((n) => String.fromCharCode(n)); // lone surrogates and NUL included
/** Strings of every kind the codec treats apart, and arbitrary ones. */
const stringArb: fc.Arbitrary<string> = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: anyUnit }),
  fc.constantFrom('', 'state', 'succeeded', 'run_', 'sha256', 'the provider performed it', 'a', '\u0000', '\ud800', '\udfff\ud800', '😀', '__proto__', '1', '01', '-1'),
  hex(64),
  hex(32).map((h) => `sha256:${h}${h}`),
  fc.tuple(fc.string(), hex(32)).map(([p, h]) => `${p}:${h}`),
  fc.tuple(fc.string(), hex(17)).map(([p, h]) => `${p}:${h}`),
  fc.tuple(fc.constantFrom('run_', 'att_', '', 'x'), fc.uuid()).map(([p, u]) => `${p}${u}`),
  fc.uuid().map((u) => u.toUpperCase()),
  hex(40).map((h) => h.toUpperCase()),
  fc.date({ min: new Date(-5e13), max: new Date(3e14), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom('2024-02-29T00:00:00.000Z', '2026-02-29T00:00:00.000Z', '1969-12-31T23:59:59.999Z', '1970-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '2026-13-01T00:00:00.000Z', '2026-12-01T24:00:00.000Z', '2026-12-01T12:00:60.000Z', '2026-12-01 12:00:00.000Z', '+2026-12-01T12:00:00.00Z'),
);
const numberArb = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.maxSafeInteger(),
  fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }),
  fc.constantFrom(0, -0, 0.1, 1e21, -1e21, 5e-324, 2 ** 53, -(2 ** 53), 2 ** 31, -(2 ** 31), 2 ** 31 - 1, 31, 32, -1, Number.MAX_VALUE, NaN, Infinity, -Infinity),
);
/** JSON values, and what JSON.stringify also accepts (undefined, Dates, toJSON, boxed primitives, holes). */
const { value: valueArb } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    stringArb,
    numberArb,
    fc.constantFrom(null, true, false, undefined),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.sparseArray(tie('value'), { maxLength: 5 }),
    fc.dictionary(stringArb, tie('value'), { maxKeys: 6 }),
    fc.date({ noInvalidDate: true }),
    fc.constantFrom(new Number(3), new String('boxed'), new Boolean(false), { toJSON: (k: string) => `key:${k}` }, () => 1),
  ),
}));

describe('body format 2', () => {
  it('reads back as the JSON text JSON.stringify writes, for any values (property)', () => {
    fc.assert(
      fc.property(valueArb, fc.array(valueArb, { maxLength: 3 }), (value, receipts) => {
        // A record is a value JSON.stringify writes (not a bare undefined or function); one not written is null.
        const record = text(value) === undefined ? null : value;
        const got = roundTrip(record, receipts);
        expect(got.record).toBe(text(record));
        expect(got.receipts).toEqual(receipts.map((r) => text(r) ?? 'null'));
      }),
      { numRuns: 2000 },
    );
  });

  it('records and receipts of every shape: same text, and appending after stored receipts gives the bytes of a full write (property)', () => {
    const receiptArb = fc.record(
      {
        businessOperationId: fc.tuple(stringArb, hex(32)).map(([p, h]) => `${p}:${h}`),
        seq: fc.nat(5),
        runId: fc.uuid().map((u) => `run_${u}`),
        provider: stringArb,
        kind: fc.constantFrom('dispatch', 'lookup', 'resolve'),
        startedAt: stringArb,
        finishedAt: stringArb,
        decision: fc.record({ action: stringArb, reason: stringArb, delayMs: numberArb }, { requiredKeys: ['action', 'reason'] }),
        status: numberArb,
        requestFingerprint: hex(64).map((h) => `sha256:${h}`),
        prevHash: fc.option(hex(64)),
        hash: hex(64),
        extra: valueArb,
      },
      { requiredKeys: ['businessOperationId', 'seq', 'hash'] },
    );
    const recordArb = fc.record({ businessOperationId: stringArb, params: valueArb, updatedAt: numberArb, createdAt: numberArb, result: valueArb, receiptChain: fc.record({ head: fc.option(hex(64)), length: fc.nat() }) });
    fc.assert(
      fc.property(recordArb, fc.array(receiptArb, { maxLength: 4 }), receiptArb, (record, receipts, next) => {
        const first = encodeBody2(record, receipts);
        const d = decodeBody2(first);
        expect(text(d.record)).toBe(text(record));
        expect(d.receipts.map(text)).toEqual(receipts.map(text));
        const appended = encodeBody2(record, [next], d.stored);
        expect(appended.equals(encodeBody2(record, [...receipts, next]))).toBe(true);
        expect(decodeBody2(appended).receipts.map(text)).toEqual([...receipts, next].map(text));
      }),
      { numRuns: 500 },
    );
  });

  it('edge cases: numbers, keys, unicode, JSON.stringify rules', () => {
    const cases: unknown[] = [
      { a: 1e21, b: -0, c: 0.1, d: 5e-324, e: Number.MAX_SAFE_INTEGER, f: -(2 ** 53) - 2, g: 1.5, h: NaN, i: -Infinity, j: 1796128407957, k: -1796128407957 },
      { b: 1, 10: 'x', 2: 'y', a: { 1: [] }, '': '', '01': 0 },
      JSON.parse('{"__proto__":{"polluted":1},"x":[1,{"__proto__":null}]}'),
      ['\u0000', '\ud800', 'a\udc00b', '\udbff\udfff', '😀'.repeat(40), 'é', 'x'.repeat(31), 'x'.repeat(32), 'x'.repeat(300), ''],
      [undefined, () => 1, Symbol('s'), , 1], // eslint-disable-line no-sparse-arrays
      { u: undefined, f: () => 1, s: Symbol('s'), kept: 1 },
      { d: new Date(0), n: new Number(-0), s: new String('\ud800'), b: new Boolean(true), t: { toJSON: (k: string) => ({ k }) } },
      { deep: JSON.parse('['.repeat(500) + ']'.repeat(500)) },
      { ts: '2026-12-01T12:33:27.956Z', again: '2026-12-01T12:33:27.956Z', before: '1970-01-01T00:00:00.000Z', upper: 'SHA256:AB', odd: 'abc', hex: 'ab', short: 'sha256:ab' },
    ];
    for (const c of cases) expect(roundTrip(c).record).toBe(text(c));
    // Deeper than the decoder reads is refused when written, not stored unreadable.
    expect(() => encodeBody2(JSON.parse('['.repeat(2500) + ']'.repeat(2500)), [])).toThrow(/nested deeper/);
    expect(Object.getPrototypeOf(decodeBody2(encodeBody2(cases[2], [])).record)).toBe(Object.prototype);
    expect(Object.keys(decodeBody2(encodeBody2(cases[2], [])).record as object)).toEqual(['__proto__', 'x']);
  });

  it('what JSON.stringify refuses is refused the same way (a cycle, a BigInt), and the next write is unaffected', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = { back: cyclic };
    expect(() => encodeBody2(cyclic, [])).toThrow(TypeError);
    expect(() => encodeBody2({ n: 1n }, [])).toThrow(TypeError);
    expect(() => encodeBody2({ n: Object(1n) }, [])).toThrow(TypeError);
    const shared = { x: 1 };
    expect(roundTrip({ a: shared, b: shared, c: [shared, shared] }).record).toBe(text({ a: shared, b: shared, c: [shared, shared] }));
  });

  it('timestamps: every ms from 1970 to 9999 is written back as Date#toISOString writes it (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 253_402_300_799_999 }), (ms) => {
        const s = new Date(ms).toISOString();
        expect(roundTrip([s, s, new Date(ms - 1).toISOString()]).record).toBe(text([s, s, new Date(ms - 1).toISOString()]));
      }),
      { numRuns: 3000 },
    );
  });

  const sample = () =>
    encodeBody2(
      {
        businessOperationId: 'noop.orders.create:2e3948fe709ce1db381e1c1c7d80c26d',
        params: { orderRef: 'o-1', amount: 1, note: 'é😀\ud800' },
        updatedAt: 1796128407957,
        ratio: 0.25,
        receiptChain: { head: '2b2b1504fcf6b75b550822cbef4f69193f9d7c22ec81da7994581cd964f17296', length: 1 },
      },
      [{ runId: 'run_416f1675-24d3-4aed-a4b9-a0de574d6974', startedAt: '2026-12-01T12:33:27.956Z', hash: '2b2b1504fcf6b75b550822cbef4f69193f9d7c22ec81da7994581cd964f17296', fields: [{ field: 'x', code: 'y'.repeat(40) }] }],
    );

  it('a cut body, or one with any bit flipped, is refused with BodyFormatError', () => {
    const body = sample();
    for (let n = 0; n < body.length; n++) expect(() => decodeBody2(body.subarray(0, n))).toThrow(BodyFormatError);
    for (let i = 0; i < body.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const flipped = Buffer.from(body);
        flipped[i]! ^= 1 << bit;
        expect(() => decodeBody2(flipped)).toThrow(BodyFormatError);
      }
    }
  });

  it('the decoder behind the checksum: cut, flipped or random bytes end in BodyFormatError or a value, never a hang or another error (fuzz)', () => {
    const body = sample();
    fuzzBodyDecoder(body, decodeBody2, 2);
  });

  it('a failed write (a cycle) leaves the encoder as it was: the next body is the same bytes as from a fresh start', () => {
    const body = () => encodeBody2({ id: 'noop.op:' + 'ab'.repeat(16), at: '2026-12-01T12:00:00.000Z' }, [{ hash: 'cd'.repeat(32), id: 'noop.op:' + 'ab'.repeat(16) }]);
    const before = body();
    const cyclic: Record<string, unknown> = { id: 'noop.op:' + 'ab'.repeat(16), s: 'some string' };
    cyclic.me = cyclic;
    expect(() => encodeBody2(cyclic, [])).toThrow(TypeError);
    expect(body().equals(before)).toBe(true);
  });

  it('the line view (tests, tools) reads format 2 as the JSON text, and formats 0 and 1 as before', () => {
    const record = { a: 1, s: 'sha256:' + 'ab'.repeat(32) };
    const receipts = [{ seq: 1, hash: 'cd'.repeat(32) }];
    const lines = { record: text(record), receipts: receipts.map(text) };
    expect(decodeBody(encodeBody2(record, receipts))).toEqual(lines);
    expect(decodeBody(encodeBody(lines, false))).toEqual(lines);
    expect(decodeBody(encodeBody(lines, true))).toEqual(lines);
    expect(() => decodeBody(Buffer.from([3, 0]))).toThrow(/format 3/);
  });
});
