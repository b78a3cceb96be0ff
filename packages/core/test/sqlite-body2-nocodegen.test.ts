// The decoder builds objects of table keys with a function made per key sequence (new Function). Where
// code cannot be made from strings (node --disallow-code-generation-from-strings), it must read every
// body the same, key by key. Its own file: the module's builders are per process, and none may exist yet.
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { decodeBody2, encodeBody2 } from '../src/ledger/sqlite-body2.js';

const cases = JSON.parse(readFileSync(new URL('./fixtures/body2-bytes.json', import.meta.url), 'utf8')) as Array<{ name: string; record: unknown; receipts: unknown[]; body: string }>;
const text = (v: unknown) => JSON.stringify(v);

it('where code cannot be made from strings, every pinned body reads back the same, key by key', () => {
  const real = globalThis.Function;
  let refusals = 0;
  globalThis.Function = new Proxy(real, {
    construct() {
      refusals++;
      throw new EvalError('Code generation from strings disallowed for this context');
    },
  });
  try {
    for (const c of cases) {
      const d = decodeBody2(Buffer.from(c.body, 'hex'));
      expect(text(d.record), c.name).toBe(text(c.record));
      expect(d.receipts.map(text), c.name).toEqual(c.receipts.map(text));
      expect(encodeBody2(d.record, d.receipts).toString('hex'), c.name).toBe(c.body);
    }
  } finally {
    globalThis.Function = real;
  }
  // Refused once, and not asked again.
  expect(refusals).toBe(1);
});
