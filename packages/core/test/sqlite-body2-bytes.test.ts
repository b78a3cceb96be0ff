// Body format 2 is frozen: files written by a release are read by every later one, and an append copies
// stored bytes after which the encoder goes on. So the encoder must write, byte for byte, what the
// encoder of commit 3583d5c wrote (fixtures/body2-bytes.json, see write-body2-bytes.mjs), and the decoder
// must read those bytes back as the same values — whatever is done to make the codec cheaper.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBody2, encodeBody2, resealBody2 } from '../src/ledger/sqlite-body2.js';

interface Case {
  name: string;
  record: unknown;
  receipts: unknown[];
  body: string;
}
const cases = JSON.parse(readFileSync(new URL('./fixtures/body2-bytes.json', import.meta.url), 'utf8')) as Case[];
const text = (v: unknown) => JSON.stringify(v);

describe('body format 2 bytes (pinned)', () => {
  it('the fixture covers the runner shapes and generated values', () => {
    expect(cases.length).toBeGreaterThan(150);
    expect(cases.filter((c) => c.receipts.length > 0).length).toBeGreaterThan(50);
  });

  it('encodes every pinned case to the bytes written before, twice in a row (no state left between encodes)', () => {
    for (const c of cases) {
      expect(encodeBody2(c.record, c.receipts).toString('hex'), c.name).toBe(c.body);
      expect(encodeBody2(c.record, c.receipts).toString('hex'), c.name).toBe(c.body);
    }
  });

  it('an enumerable property on Object.prototype, or a getter that deletes a later key, changes nothing JSON.stringify would not', () => {
    const proto = Object.prototype as Record<string, unknown>;
    proto.polluted = 'x';
    try {
      for (const c of cases.slice(0, 20)) expect(encodeBody2(c.record, c.receipts).toString('hex'), c.name).toBe(c.body);
    } finally {
      delete proto.polluted;
    }
    const o = {
      a: 1,
      get b() {
        delete (this as Record<string, unknown>).c;
        return 2;
      },
      c: 3,
      d: 4,
    };
    expect(text(decodeBody2(encodeBody2(o, [])).record)).toBe(text(o));
  });

  it('decodes every pinned body to the same JSON text, and appending the last receipt after the others gives the pinned bytes', () => {
    for (const c of cases) {
      const d = decodeBody2(Buffer.from(c.body, 'hex'));
      expect(text(d.record), c.name).toBe(text(c.record));
      expect(d.receipts.map(text), c.name).toEqual(c.receipts.map(text));
      if (c.receipts.length === 0) continue;
      const before = decodeBody2(encodeBody2(c.record, c.receipts.slice(0, -1)));
      expect(encodeBody2(c.record, c.receipts.slice(-1), before.stored).toString('hex'), c.name).toBe(c.body);
      // Decoding a body yields objects the encoder writes back to the same bytes.
      expect(encodeBody2(d.record, d.receipts).toString('hex'), c.name).toBe(c.body);
    }
  });

  it('a body of thousands of strings (back-references past 32, shared buckets, repeated keys) is the bytes written before', () => {
    // The digest of this body as the encoder of commit 3583d5c wrote it.
    const hexOf = (i: number) => createHash('sha256').update(String(i)).digest('hex');
    const values: string[] = [];
    for (let i = 0; i < 700; i++) {
      const h = hexOf(i);
      values.push(`sha256:${h}`, `k${i % 97}`, h.slice(0, 2 + (i % 40)), `id:${h.slice(0, 32)}`, new Date(1796137962765 + i * 1000).toISOString(), `run_${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`);
    }
    const record = { values, again: values.slice().reverse(), keys: Object.fromEntries(values.slice(0, 300).map((v, i) => [v, i])) };
    const receipts = [values.slice(0, 50), { x: values.slice(100, 200) }];
    const body = encodeBody2(record, receipts);
    expect(createHash('sha256').update(body).digest('hex')).toBe('3bf012c4a9131d66c0294bcf4d6d3d40bd1e688c05c96fc18b7c037b5af0df00');
    const d = decodeBody2(body);
    expect(text(d.record)).toBe(text(record));
    expect(encodeBody2(record, receipts.slice(1), decodeBody2(encodeBody2(record, receipts.slice(0, 1))).stored).equals(body)).toBe(true);
  });

  it('objects of table keys in many orders read back as written, as do keys repeated in a crafted body', () => {
    const keys = ['state', 'fence', 'seq', 'hash', 'kind', 'id', 'at', 'by', 'reason', 'action'];
    const values: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 1500; i++) {
      const o: Record<string, unknown> = {};
      for (let j = 0, x = i; j < 4; j++, x = Math.floor(x / keys.length)) o[keys[(x + j) % keys.length]!] = i * 10 + j;
      values.push(o);
    }
    const d = decodeBody2(encodeBody2({ values, nested: { state: { state: { seq: [{ hash: {} }] } } } }, values.slice(0, 40)));
    expect(text(d.record)).toBe(text({ values, nested: { state: { state: { seq: [{ hash: {} }] } } } }));
    expect(d.receipts.map(text)).toEqual(values.slice(0, 40).map(text));
    for (const o of (d.record as { values: object[] }).values) expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
    // {state: 1, fence: 2, state: 3} as a crafted body (the encoder never repeats a key): the last value, in the first key's place.
    const crafted = resealBody2(Buffer.from([2, 0, 0xc3, 0x07, 0xa1, 0x08, 0xa2, 0x07, 0xa3, 0xc5, 0, 0, 0, 0]));
    expect(text(decodeBody2(crafted).record)).toBe('{"state":3,"fence":2}');
  });

  it('a value JSON.stringify rewrites (undefined, -0, NaN, Dates, toJSON, boxed values, holes) is written as its JSON text parsed is (property)', () => {
    const odd = fc.constantFrom<unknown>(undefined, -0, NaN, -Infinity, new Date(1796137962765), new Number(-0), new String('boxed'), new Boolean(true), { toJSON: (k: string) => `key:${k}` }, () => 1, [1, , 3]); // eslint-disable-line no-sparse-arrays
    const { value } = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, fc.string(), fc.double(), fc.integer(), odd, fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(fc.string(), tie('value'), { maxKeys: 5 })),
    }));
    fc.assert(
      fc.property(fc.dictionary(fc.string(), value, { maxKeys: 6 }), fc.array(value, { maxLength: 2 }), (record, receipts) => {
        const parsed = JSON.parse(text(record)) as unknown;
        const parsedReceipts = receipts.map((r) => JSON.parse(text(r) ?? 'null') as unknown);
        expect(encodeBody2(record, receipts).equals(encodeBody2(parsed, parsedReceipts))).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});
