// Body format 3 of the SQLite ledger (issue 23, eighth round): format 2's tokens with the record's head
// (ids, fingerprints, params, key) before the receipts, so a write that keeps the head copies its bytes.
// Pinned like format 2 (fixtures/body3-bytes.json, written by write-body3-bytes.mjs): files written by a
// release are read by every later one, and the next write copies stored bytes.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BodyFormatError, decodeBinaryBody, decodeBody2, decodeBody3, encodeBody2, encodeBody3, resealBody2, type StoredReceipts } from '../src/ledger/sqlite-body2.js';
import { decodeBody } from '../src/ledger/sqlite-layout.js';
import { fuzzBodyDecoder } from './body-fuzz.js';

interface Case {
  name: string;
  record: Record<string, unknown>;
  receipts: unknown[];
  body: string;
}
const cases = JSON.parse(readFileSync(new URL('./fixtures/body3-bytes.json', import.meta.url), 'utf8')) as Case[];
const text = (v: unknown) => JSON.stringify(v);
const HEAD = ['businessOperationId', 'provider', 'operation', 'intentFingerprint', 'paramsFingerprint', 'params', 'providerKey'];
const full = (record: unknown, receipts: readonly unknown[]) => encodeBody3(record, receipts, null, null)!;
/** The keys of a record's head: its members JSON.stringify writes, while their keys follow HEAD. */
const headKeys = (r: Record<string, unknown>) => {
  const keys = Object.keys(r).filter((k) => text(r[k]) !== undefined);
  let h = 0;
  while (h < keys.length && h < HEAD.length && keys[h] === HEAD[h]) h++;
  return keys.slice(0, h);
};

const hex = (n: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n });
const stringArb = fc.oneof(
  fc.string(),
  fc.string({ unit: fc.nat(0xffff).map((n) => String.fromCharCode(n)) }),
  fc.constantFrom('', 'state', 'noop', 'succeeded', 'run_', '\ud800', '😀', '__proto__'),
  hex(64).map((h) => `sha256:${h}`),
  fc.tuple(fc.string(), hex(32)).map(([p, h]) => `${p}:${h}`),
  fc.uuid().map((u) => `att_${u}`),
  fc.date({ min: new Date(0), max: new Date(3e14), noInvalidDate: true }).map((d) => d.toISOString()),
);
const { value: valueArb } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    stringArb,
    fc.oneof(fc.integer(), fc.double(), fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 })),
    fc.constantFrom(null, true, false, undefined),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(stringArb, tie('value'), { maxKeys: 4 }),
    fc.date({ noInvalidDate: true }),
  ),
}));
/** A record whose first h keys are the head's, in order (h = 0..7), then others; values of every kind. */
const recordArb = fc
  .tuple(fc.nat(HEAD.length), fc.array(valueArb, { minLength: HEAD.length, maxLength: HEAD.length }), fc.dictionary(stringArb, valueArb, { maxKeys: 5 }), fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }))
  .map(([h, hv, rest, updatedAt]) => {
    const r: Record<string, unknown> = {};
    HEAD.slice(0, h).forEach((k, i) => (r[k] = hv[i]));
    r.state = 'dispatched';
    r.updatedAt = updatedAt;
    for (const [k, v] of Object.entries(rest)) if (!(k in r)) r[k] = v;
    return r;
  });
const receiptsArb = fc.array(fc.oneof(valueArb, fc.record({ businessOperationId: stringArb, seq: fc.nat(5), startedAt: stringArb, requestFingerprint: stringArb, hash: hex(64), extra: valueArb })), { maxLength: 3 });
/** The record after a transition that keeps its head: the same head values (by identity), the rest changed. */
const next = (r: Record<string, unknown>, updatedAt: number) => ({ ...r, state: 'succeeded', updatedAt, receiptChain: { head: 'ab'.repeat(32), length: 1 } });

describe('body format 3 bytes (pinned)', () => {
  it('the fixture covers format 2\'s object records and the ledger\'s shape', () => {
    expect(cases.length).toBeGreaterThan(90);
    expect(cases.filter((c) => c.receipts.length > 0).length).toBeGreaterThan(50);
    expect(cases.filter((c) => Object.keys(c.record)[0] === 'businessOperationId').length).toBeGreaterThan(40);
  });

  it('encodes every pinned case to the pinned bytes, twice in a row; decodes each to the same JSON text as format 2 does', () => {
    for (const c of cases) {
      expect(full(c.record, c.receipts).body.toString('hex'), c.name).toBe(c.body);
      expect(full(c.record, c.receipts).body.toString('hex'), c.name).toBe(c.body);
      const d = decodeBody3(Buffer.from(c.body, 'hex'));
      const d2 = decodeBody2(encodeBody2(c.record, c.receipts));
      expect(text(d.record), c.name).toBe(text(c.record));
      expect(text(d.record), c.name).toBe(text(d2.record));
      expect(d.receipts.map(text), c.name).toEqual(d2.receipts.map(text));
      // Decoding a body yields objects the encoder writes back to the same bytes.
      expect(full(d.record, d.receipts).body.toString('hex'), c.name).toBe(c.body);
    }
  });

  it('appending the last receipt after the decoded others gives the pinned bytes: head copied (the decoded record) or written again (a copy of it)', () => {
    for (const c of cases) {
      if (c.receipts.length === 0) continue;
      const before = decodeBody3(full(c.record, c.receipts.slice(0, -1)).body);
      const copied = encodeBody3(before.record, c.receipts.slice(-1), before.stored, null);
      expect(copied!.body.toString('hex'), c.name).toBe(c.body);
      // A record equal to the stored one but not holding its values: the head is written again, from the receipts' values.
      const fresh = JSON.parse(text(before.record)) as Record<string, unknown>;
      const again = encodeBody3(fresh, c.receipts.slice(-1), before.stored, before.receipts);
      expect(again!.body.toString('hex'), c.name).toBe(c.body);
    }
  });
});

describe('body format 3', () => {
  it('reads back as the JSON text JSON.stringify writes; the line view and decodeBinaryBody read it too (property)', () => {
    fc.assert(
      fc.property(recordArb, receiptsArb, (record, receipts) => {
        const body = full(record, receipts).body;
        expect(body[0]).toBe(3);
        const d = decodeBody3(body);
        expect(text(d.record)).toBe(text(record));
        expect(d.receipts.map(text)).toEqual(receipts.map((r) => text(r) ?? 'null'));
        expect(text(decodeBinaryBody(body).record)).toBe(text(record));
        expect(decodeBody(body)).toEqual({ record: text(record), receipts: receipts.map((r) => text(r) ?? 'null') });
      }),
      { numRuns: 1500 },
    );
  });

  it('a write that keeps the head copies it and the stored receipts: the bytes of a full write, from an encode\'s stored part or a decode\'s (property)', () => {
    fc.assert(
      fc.property(recordArb, receiptsArb, receiptsArb, fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }), (record, stored, added, at) => {
        const later = next(record, at);
        const want = full(later, [...stored, ...added]).body;
        const first = full(record, stored);
        // A NaN in the head is never the same value again (NaN !== NaN): written whole, so the stored receipts' values are needed.
        const copies = !headKeys(record).some((k) => Number.isNaN(record[k]));
        const values = copies ? null : stored;
        expect(encodeBody3(later, added, first.stored, values)!.body.equals(want)).toBe(true);
        const d = decodeBody3(first.body);
        expect(encodeBody3(next(d.record as Record<string, unknown>, at), added, d.stored, values)!.body.equals(want)).toBe(true);
        // And the write after that, from the stored part the second write answered.
        const second = encodeBody3(later, added, first.stored, values)!;
        const last = next(later, at + 1);
        expect(encodeBody3(last, [], second.stored, copies ? null : [...stored, ...added])!.body.equals(full(last, [...stored, ...added]).body)).toBe(true);
      }),
      { numRuns: 700 },
    );
  });

  it('a write whose head changed writes it again: from the stored receipts\' values, else no answer (null) — never the stored head\'s bytes (property)', () => {
    fc.assert(
      fc.property(recordArb, receiptsArb, receiptsArb, valueArb, (record, stored, added, params) => {
        const first = full(record, stored);
        // The same values as new objects (equal, not the same), or a new params value.
        const copy = JSON.parse(text(record)) as Record<string, unknown>;
        const changed = 'params' in record ? { ...record, params } : copy;
        for (const later of [copy, changed]) {
          const want = full(later, [...stored, ...added]).body;
          // A head value whose JSON text changed is never copied (a value the same as JSON, e.g. a Date and its text, may be).
          const changedHead = headKeys(record).some((k) => text(later[k]) !== text(record[k]));
          const got = encodeBody3(later, added, first.stored, null);
          if (got === null) expect(stored.length).toBeGreaterThan(0);
          else expect(got.body.equals(want)).toBe(true);
          if (changedHead && stored.length > 0) expect(got).toBeNull();
          const decodedValues = decodeBody3(first.body).receipts;
          expect(encodeBody3(later, added, first.stored, decodedValues)!.body.equals(want)).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('`like`: the head compared is that record\'s, the bytes written are the copy\'s (the ledger encodes its kept copy)', () => {
    const id = 'noop.op:' + 'ab'.repeat(16);
    const fp = 'sha256:' + 'ef'.repeat(32);
    const record = { businessOperationId: id, provider: 'noop', operation: 'op', intentFingerprint: fp, paramsFingerprint: fp, params: { orderRef: 'w0-1', amount: 1 }, providerKey: id, state: 'dispatched' };
    const first = full(record, [{ seq: 1, hash: 'cd'.repeat(32) }]);
    const later = { ...record, state: 'unknown' };
    const copy = JSON.parse(text(later)) as typeof later;
    const want = full(later, [{ seq: 1, hash: 'cd'.repeat(32) }]).body;
    const got = encodeBody3(copy, [], first.stored, null, later)!;
    expect(got.body.equals(want)).toBe(true);
    // Its stored head holds the copy's values: the copy's next write copies again, another object's does not.
    expect(got.stored!.head!.values).toContain(copy.params);
    expect(encodeBody3({ ...copy, state: 'succeeded' }, [], got.stored, null)!.body.equals(full({ ...copy, state: 'succeeded' }, [{ seq: 1, hash: 'cd'.repeat(32) }]).body)).toBe(true);
    expect(encodeBody3({ ...later, state: 'succeeded' }, [], got.stored, null)).toBeNull();
  });

  it('`keep`: without it the same body and no stored part; an encode without it leaves the stored parts answered before as they were', () => {
    const id = 'noop.op:' + 'ab'.repeat(16);
    const a = { businessOperationId: id, provider: 'noop', operation: 'op', intentFingerprint: 'sha256:' + '01'.repeat(32), paramsFingerprint: 'sha256:' + '02'.repeat(32), params: { n: 1 }, providerKey: id, state: 'dispatched' };
    const b = { ...a, businessOperationId: 'other', params: { n: 2 }, state: 'succeeded' };
    const kept = encodeBody3(a, [], null, null, a, true)!;
    const values = [...kept.stored!.head!.values];
    const other = encodeBody3(b, [{ seq: 1 }], null, null, b, false)!;
    expect(other.stored).toBeNull();
    expect(other.body.equals(full(b, [{ seq: 1 }]).body)).toBe(true);
    expect(kept.stored!.head!.values).toEqual(values);
    expect(kept.stored!.head!.values[5]).toBe(a.params);
    const later = { ...a, state: 'succeeded' };
    expect(encodeBody3(later, [{ seq: 1 }], kept.stored, null, later, false)!.body.equals(full(later, [{ seq: 1 }]).body)).toBe(true);
  });

  it('UUID tails: every character of a UUID changed (a non-hex digit, a dash, an upper-case digit, a wide character) reads back as written, in both formats', () => {
    const uuid = '0f8fad5b-d9cb-469f-a165-70867728950e';
    const strings = [`run_${uuid}`, uuid];
    for (let i = 0; i < uuid.length; i++) for (const c of ['g', '-', 'A', 'F', '0', '\u0130', ':']) strings.push(`run_${uuid.slice(0, i)}${c}${uuid.slice(i + 1)}`);
    const record = { businessOperationId: 'x', values: strings };
    expect(text(decodeBody3(full(record, [strings]).body).record)).toBe(text(record));
    expect(text(decodeBody2(encodeBody2(record, [strings])).record)).toBe(text(record));
    expect(decodeBody3(full(record, [strings]).body).receipts.map(text)).toEqual([text(strings)]);
  });

  it('timestamps: one every 97 days (and a varying time of day) from 1970 to 9999 reads back as Date#toISOString writes it, as the only timestamp and after another', () => {
    for (let day = 0, i = 0; day < 2_932_897; day += 97, i++) {
      const ms = day * 86_400_000 + ((i * 7_919_017) % 86_400_000);
      const s = new Date(ms).toISOString();
      const before = new Date(Math.max(0, ms - 1_234_567)).toISOString();
      const d = decodeBody3(full({ businessOperationId: s, at: [before, s] }, []).body).record as { businessOperationId: string; at: string[] };
      if (d.businessOperationId !== s || d.at[0] !== before || d.at[1] !== s) expect({ s, before, got: d }).toBeUndefined();
    }
  });

  it('a head of other keys than the encoder\'s (a crafted body) is read but never copied', () => {
    // {provider: 'x', state: 1} as head pairs (count 2), no receipts, then {fence: 2}: byte 3, n = 0, h = 2, …
    const crafted = resealBody2(Buffer.from([3, 0, 2, 0x01, 0x81, 0x78, 0x07, 0xa1, 0x08, 0xa2, 0xc5, 0, 0, 0, 0]));
    const d = decodeBody3(crafted);
    expect(text(d.record)).toBe('{"provider":"x","state":1,"fence":2}');
    expect(d.stored.head!.count).toBe(-1);
    const later = { businessOperationId: 'x', provider: 1, fence: 3 };
    expect(encodeBody3(later, [], d.stored, d.receipts)!.body.equals(full(later, []).body)).toBe(true);
  });

  it('refuses what it cannot hold or copy: a record that is not an object, format 2 stored receipts; a failed write leaves the encoder as it was', () => {
    expect(() => encodeBody3([1, 2], [], null, null)).toThrow(TypeError);
    expect(() => encodeBody3('text', [], null, null)).toThrow(TypeError);
    const f2: StoredReceipts = decodeBody2(encodeBody2({ a: 1 }, [{ b: 2 }])).stored;
    expect(() => encodeBody3({ a: 1 }, [], f2, null)).toThrow(/format 2/);
    const body = () => full({ businessOperationId: 'noop.op:' + 'ab'.repeat(16), at: '2026-12-01T12:00:00.000Z' }, [{ hash: 'cd'.repeat(32) }]).body;
    const before = body();
    const cyclic: Record<string, unknown> = { businessOperationId: 'noop.op:' + 'ab'.repeat(16), s: 'some string' };
    cyclic.params = cyclic;
    expect(() => full(cyclic, [])).toThrow(TypeError);
    const tail: Record<string, unknown> = { businessOperationId: 'x' };
    tail.me = [tail];
    expect(() => full(tail, [{ a: 1 }])).toThrow(TypeError);
    expect(body().equals(before)).toBe(true);
    // A receipt holding the record is no cycle (JSON.stringify writes them apart), as in format 2.
    const record = { businessOperationId: 'x', state: 'claimed' };
    expect(text(decodeBody3(full(record, [{ of: record }]).body).receipts[0])).toBe(text({ of: record }));
  });

  it('a cut body, or one with any bit flipped, is refused with BodyFormatError; behind the checksum, anything ends in BodyFormatError or a value (fuzz)', () => {
    const c = cases.find((x) => x.receipts.length > 0 && Object.keys(x.record)[0] === 'businessOperationId')!;
    const body = Buffer.from(c.body, 'hex');
    for (let n = 0; n < body.length; n++) expect(() => decodeBody3(body.subarray(0, n))).toThrow(BodyFormatError);
    for (let i = 0; i < body.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const flipped = Buffer.from(body);
        flipped[i]! ^= 1 << bit;
        expect(() => decodeBinaryBody(flipped)).toThrow(BodyFormatError);
      }
    }
    fuzzBodyDecoder(body, decodeBody3, 3);
  });
});
