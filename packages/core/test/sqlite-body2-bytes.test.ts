// Body format 2 is frozen: files written by a release are read by every later one, and an append copies
// stored bytes after which the encoder goes on. So the encoder must write, byte for byte, what the
// encoder of commit 3583d5c wrote (fixtures/body2-bytes.json, see write-body2-bytes.mjs), and the decoder
// must read those bytes back as the same values — whatever is done to make the codec cheaper.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBody2, encodeBody2 } from '../src/ledger/sqlite-body2.js';

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
